#!/usr/bin/env python3
r"""A pipelining client that writes without reading, then reads, against the HTTP echo example
server over 127.0.0.1: every complete request must be answered, in order, before the server
gives up on an incomplete last one (408 after the header timeout, then a clean close, no reset).

  http_pipeline_unread_test.py SERVER_BINARY

Starts the server (--threads 1 --header-timeout-ms 1000) on a free port and stops it by its PID
at the end. Cases, each on a fresh connection, 20,000 pipelined GET /plaintext:
 1  the last request cut off after a few bytes, read at once: 20,000 x 200, one 408, EOF;
 2  the same, read only 2.5 s after the last byte was sent (past the 1 s header timeout): the
    same, as the incomplete request's timeout waits until the responses before it are taken;
 3  the last request whole: 20,000 x 200, no 408, the connection still open.
Every socket operation has a timeout and the whole run is bounded to 60 s. Prints 'ok NAME' or
'FAIL NAME (DETAIL)' per check, then 'N passed, M failed'; exits non-zero on any failure."""
import re
import selectors
import signal
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
REQUESTS = 20_000
HEADER_TIMEOUT_MS = 1000
GET = b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"
PARTIAL = b"GET /pla"
DEADLINE = time.monotonic() + 60.0
HEAD = re.compile(rb"HTTP/1\.1 (\d{3}) [^\r]*\r\n((?:[^\r]+\r\n)*)\r\n")
LENGTH = re.compile(rb"(?im)^content-length: *(\d+)\r$")

results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(f"ok {name}" if condition else f"FAIL {name} ({detail})")
    sys.stdout.flush()


def start_server(binary):
    proc = subprocess.Popen([binary, "--host", HOST, "--port", "0", "--threads", "1",
                             "--header-timeout-ms", str(HEADER_TIMEOUT_MS)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, int(m.group(1))


def parse(data):
    """The statuses of the responses in data, and the bytes left after the last whole one."""
    statuses, at = [], 0
    while True:
        m = HEAD.match(data, at)
        if not m:
            break
        length = LENGTH.search(m.group(2) + b"\r\n")
        n = int(length.group(1)) if length else 0
        if m.end() + n > len(data):
            break
        statuses.append((int(m.group(1)), bytes(data[m.end():m.end() + n])))
        at = m.end() + n
    return statuses, len(data) - at


def run(port, partial, read_delay):
    """Writes the requests without reading for as long as the server takes them (or read_delay
    after all of them), then reads while writing the rest. Returns (data, how it ended)."""
    payload = GET * REQUESTS + (PARTIAL if partial else b"")
    s = socket.create_connection((HOST, port), timeout=5.0)
    s.setblocking(False)
    sel = selectors.DefaultSelector()
    sent = 0
    # Phase 1: write only, until everything is written or the server stops taking bytes.
    blocked_since = None
    while sent < len(payload) and time.monotonic() < DEADLINE:
        try:
            sent += s.send(payload[sent:])
            blocked_since = None
        except BlockingIOError:
            now = time.monotonic()
            blocked_since = blocked_since or now
            if now - blocked_since > 0.5:
                break
            time.sleep(0.01)
    if sent == len(payload):
        time.sleep(read_delay)
    # Phase 2: read, and write what is left.
    data = bytearray()
    how = "timeout"
    sel.register(s, selectors.EVENT_READ | (selectors.EVENT_WRITE if sent < len(payload) else 0))
    quiet_until = None
    while time.monotonic() < DEADLINE:
        events = sel.select(timeout=0.2)
        if not events and not partial:
            statuses, _ = parse(data)
            if len(statuses) >= REQUESTS:
                # Whole requests only: answered, and nothing more comes for a while.
                quiet_until = quiet_until or time.monotonic() + 2 * HEADER_TIMEOUT_MS / 1000
                if time.monotonic() >= quiet_until:
                    how = "open"
                    break
        for _, mask in events:
            if mask & selectors.EVENT_WRITE:
                try:
                    sent += s.send(payload[sent:])
                except BlockingIOError:
                    pass
                if sent == len(payload):
                    sel.modify(s, selectors.EVENT_READ)
            if mask & selectors.EVENT_READ:
                try:
                    chunk = s.recv(1 << 20)
                except BlockingIOError:
                    continue
                except ConnectionResetError:
                    how = "reset"
                    break
                if not chunk:
                    how = "eof"
                    break
                data += chunk
        if how in ("reset", "eof"):
            break
    sel.close()
    s.close()
    return data, how, sent == len(payload)


def case(port, name, partial, read_delay):
    data, how, all_sent = run(port, partial, read_delay)
    statuses, left = parse(data)
    ok = [st for st in statuses if st == (200, b"Hello, World!")]
    check(f"{name}: every request written", all_sent)
    check(f"{name}: {REQUESTS} x 200 Hello, World! first", len(ok) == REQUESTS and
          all(st == (200, b"Hello, World!") for st in statuses[:REQUESTS]),
          f"{len(ok)} of {REQUESTS}, then {how}")
    if partial:
        check(f"{name}: then one 408 and nothing else", statuses[REQUESTS:] and
              [st[0] for st in statuses[REQUESTS:]] == [408] and left == 0,
              f"after the 200s: {[st[0] for st in statuses[REQUESTS:]][:5]}, {left} bytes left")
        check(f"{name}: then a clean close (EOF, no reset)", how == "eof", how)
    else:
        check(f"{name}: nothing else, the connection still open",
              len(statuses) == REQUESTS and left == 0 and how == "open",
              f"{len(statuses)} responses, {left} bytes left, {how}")


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    proc, port = start_server(sys.argv[1])
    try:
        case(port, "incomplete last request, read at once", True, 0.0)
        case(port, "incomplete last request, read after the header timeout", True, 2.5)
        case(port, "whole last request", False, 0.0)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    failed = results.count(False)
    print(f"{results.count(True)} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
