#!/usr/bin/env python3
"""Smoke test of examples/hexdump_proxy: puts it (ephemeral loopback port) in front of a small
Python echo server and checks that bytes go through both ways (a short text and 2 MiB sent and
read at once), that the proxy's output carries hex dumps of what passed in both directions,
that a client closing closes the proxy's connection to the echo server, that a client that
stops reading makes the proxy's side unwritable without losing bytes, that the echo server
closing closes the client's connection, and that a client is closed when the remote refuses.
Stops the proxy by its PID (SIGTERM). Bounded: each step has a timeout.
Usage: hexdump_proxy_smoke_test.py HEXDUMP_PROXY."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

PROXY = sys.argv[1]
HOST = "127.0.0.1"
results = []
upstream_closed = []  # one threading.Event per connection the echo server accepted


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail})"))


def echo_connection(conn, closed):
    """Echoes until the end of the stream; closes first itself after echoing b"close-now"."""
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            conn.sendall(data)
            if data.endswith(b"close-now"):
                break
    closed.set()


def echo_server(listener):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        closed = threading.Event()
        upstream_closed.append(closed)
        threading.Thread(target=echo_connection, args=(conn, closed), daemon=True).start()


def start_proxy(remote_port):
    proc = subprocess.Popen([PROXY, "--host", HOST, "--port", "0", "--remote-host", HOST,
                             "--remote-port", str(remote_port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    m = re.search(r"listening on [\d.]+:(\d+)", proc.stdout.readline())
    output = []
    proc.reader = threading.Thread(target=lambda: [output.append(l) for l in proc.stdout],
                                   daemon=True)
    proc.reader.start()
    return proc, (int(m.group(1)) if m else None), output


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.reader.join(timeout=10)  # the rest of the output, up to the end of the stream
    return proc.returncode


def recv_exactly(sock, n):
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(min(n - len(data), 1 << 16))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def wait_for_line(output, text, start, timeout):
    """The index of the first line from output[start:] that contains text, or None."""
    deadline = time.monotonic() + timeout
    i = start
    while time.monotonic() < deadline:
        while i < len(output):
            if text in output[i]:
                return i
            i += 1
        time.sleep(0.05)  # polls the proxy's output, collected by another thread
    return None


def read_until_eof(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def main():
    listener = socket.create_server((HOST, 0))
    threading.Thread(target=echo_server, args=(listener,), daemon=True).start()
    proc, port, output = start_proxy(listener.getsockname()[1])
    try:
        check("proxy starts and prints its port", port is not None)
        if port is None:
            return 1
        with socket.create_connection((HOST, port), timeout=20) as s:
            s.sendall(b"hello, proxy!")
            check("a short text comes back through the proxy",
                  recv_exactly(s, 13) == b"hello, proxy!")
            payload = os.urandom(2 << 20)
            sender = threading.Thread(target=s.sendall, args=(payload,))
            sender.start()
            got = b""
            while len(got) < len(payload):
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                got += chunk
            sender.join(timeout=20)
            check("2 MiB come back through the proxy, in order", got == payload, len(got))
        check("the client's close closes the proxy's remote connection",
              upstream_closed[0].wait(timeout=10))

        # A client that does not read: the proxy's side of it fills up (unwritable), the proxy
        # stops reading from the remote; once the client reads, everything arrives, in order.
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)  # no autotuning
            s.settimeout(30)
            s.connect((HOST, port))
            start = len(output)
            payload = os.urandom(16 << 20)
            sender = threading.Thread(target=s.sendall, args=(payload,), daemon=True)
            sender.start()
            full = wait_for_line(output, "WRITABILITY CHANGED: unwritable", start, 30)
            check("the proxy's side of a client that does not read becomes unwritable",
                  full is not None)
            got = recv_exactly(s, len(payload))
            sender.join(timeout=30)
            check("16 MiB come back in order once the client reads", got == payload, len(got))
            check("the proxy's side becomes writable again",
                  full is not None and
                  wait_for_line(output, "WRITABILITY CHANGED: writable", full, 10) is not None)

        with socket.create_connection((HOST, port), timeout=20) as s:
            s.sendall(b"close-now")
            check("the remote's close reaches the client after its bytes",
                  read_until_eof(s) == b"close-now")
    finally:
        code = stop(proc)
    check("proxy exits cleanly on SIGTERM", code == 0, code)
    text = "".join(output)
    dump = "68 65 6c 6c 6f 2c 20 70 72 6f 78 79 21"  # "hello, proxy!"
    check("the output has a hex dump of what the client sent (READ)",
          re.search(r"READ: 13B\n00000000  " + dump + r" +\|hello, proxy!\|", text) is not None,
          text[:2000])
    check("the output has a hex dump of what went back (WRITE)",
          re.search(r"WRITE: 13B\n00000000  " + dump, text) is not None)

    with socket.socket() as bound:  # bound but not listening: connections are refused
        bound.bind((HOST, 0))
        proc, port, output = start_proxy(bound.getsockname()[1])
        try:
            with socket.create_connection((HOST, port), timeout=20) as s:
                check("a client is closed when the remote refuses", read_until_eof(s) == b"")
        finally:
            code = stop(proc)
    check("second proxy exits cleanly on SIGTERM", code == 0, code)
    listener.close()
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
