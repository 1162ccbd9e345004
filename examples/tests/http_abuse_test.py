#!/usr/bin/env python3
r"""Abuse suite of the HTTP echo example server: clients that misbehave on purpose (a pipelining
client that never reads, slowloris heads and bodies, floods of tiny or over-extended chunks,
oversized bodies, malformed requests among good ones) and what the server must do about them.
Python standard library only, raw sockets on 127.0.0.1.

  http_abuse_test.py SERVER_BINARY [--figures FILE]

Each case starts its own server (SERVER_BINARY --host 127.0.0.1 --port 0 --threads 1
--header-timeout-ms 2000 --body-timeout-ms 2000), uses fresh connections only, and stops the
server by its PID at the end. A server that does not know the timeout flags (it prints its
usage) is started without them: the cases that need the timeouts fail, saying so, and the rest
run as usual. Prints 'ok NAME: FIGURE' or 'FAIL NAME (DETAIL)' per check, the figures of every
case in a compact block (also written to FILE with --figures), then 'N passed, M failed'; exits
non-zero on any failure. The whole run is bounded to 90 s wall time: every socket operation has
a timeout, every case a budget taken from one global deadline, and a watchdog ends the run
(killing the server) if a case overruns it anyway.

The cases and what passes:
 1  one connection pipelines GET /plaintext for 10 s and never reads: server RSS growth < 32 MB
    and server CPU over the last 5 s < 5 % of a core; then, reading, exactly one 200
    "Hello, World!" per request sent (Content-Length framing), nothing more.
 2  slowloris: 200 connections with a partial head, 200 with a head announcing 10 body bytes
    and 3 of them; all closed by the server within the 2 s timeout + 1 s of their last byte, a
    partial head reading 408 if anything; a client sending GET /plaintext every 100 ms gets
    200 every time meanwhile.
 3a chunks "1;e=<1000 x>" one per send until the server answers (a 400 at its chunk-extension
    limit) or 16 MiB of extensions: RSS growth < 8 MB; a 400, or the whole body echoed.
 3b 200,000 chunks "1\r\nX\r\n" one per send, then the last chunk: 200 with the 200,000 bytes,
    RSS growth < 8 MB.
 4  RFC 9112/9110 over the socket: a malformed request (space before the colon) between two
    good ones in one send gets 200, 400 + Connection: close, EOF; a request with
    Connection: close (or HTTP/1.0 without keep-alive) and a second GET in the same send: one
    response, EOF; invalid Host values get 400 + close, example.com:8080 and [::1]:80 get 200.
 5  a 2 MB body over the 1 MiB limit, in one sendall or in 64 KiB pieces: the client reads
    HTTP/1.1 413 (send errors are tolerated, a reset before the 413 is not).
 6  a request with a 10-byte body then a malformed request: 200 with the body, then 400 + close,
    whether the two come in one send or two.
Under ThreadSanitizer the RSS bounds (cases 1, 3a, 3b) are reported, not checked: RSS there is
mostly the tool's shadow memory (see check_memory)."""
import errno
import os
import re
import resource
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

HOST = "127.0.0.1"
TOTAL_BUDGET = 90.0          # s, the whole run
T0 = time.monotonic()
DEADLINE = T0 + TOTAL_BUDGET - 2.0  # 2 s kept for stopping the last server and the summary
HEADER_TIMEOUT_MS = 2000
BODY_TIMEOUT_MS = 2000
MIB = 1 << 20
PLAINTEXT_GET = b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"
HELLO = b"Hello, World!"

results = []   # booleans, one per check
figures = []   # (case, compact figure text)
timeout_flags = {"supported": None, "reason": ""}


# ---------------------------------------------------------------------------------------------
# reporting, time


def check(name, condition, figure="", detail=""):
    results.append(bool(condition))
    if condition:
        print(f"ok {name}: {figure}" if figure else f"ok {name}")
    else:
        print(f"FAIL {name} ({detail or figure})")
    sys.stdout.flush()
    return condition


def figure(case, text):
    figures.append((case, text))


def runs_under_tsan(pid):
    """True when the server process has ThreadSanitizer's runtime mapped."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "libtsan" in f.read()
    except OSError:
        return False


def check_memory(server, name, condition, text, detail=""):
    """A bound on the server's RSS growth. Where RSS measures the server (a plain build, or
    AddressSanitizer with the small quarantine of server_env) it is checked. Under
    ThreadSanitizer every page of heap the server touches costs about five more of shadow and
    meta memory, and its allocator keeps freed blocks per thread, so RSS growth measures the tool
    (3.5 to 9.6 MB seen for one case whose plain build grows by 0.4 MB): the figure is
    reported, and the bound is left to the other builds, which run the same case."""
    if runs_under_tsan(server.pid):
        print(f"info {name}: not checked under ThreadSanitizer: {detail or text}")
        sys.stdout.flush()
        return True
    return check(name, condition, text, detail)


def remaining():
    return DEADLINE - time.monotonic()


def budget(seconds):
    """seconds, or what is left of the global deadline if that is less (never negative)."""
    return max(0.0, min(seconds, remaining()))


# ---------------------------------------------------------------------------------------------
# the server process


class Server:
    def __init__(self, binary):
        self.binary = binary
        self.proc = None
        self.port = None

    def start(self):
        flags = ["--host", HOST, "--port", "0", "--threads", "1"]
        timeouts = ["--header-timeout-ms", str(HEADER_TIMEOUT_MS),
                    "--body-timeout-ms", str(BODY_TIMEOUT_MS)]
        if timeout_flags["supported"] is not False:
            ok, line = self._spawn(flags + timeouts)
            if ok:
                timeout_flags["supported"] = True
                return
            if "usage" not in line.lower():
                raise RuntimeError(f"server did not start: {line!r}")
            timeout_flags["supported"] = False
            timeout_flags["reason"] = ("server rejects --header-timeout-ms/--body-timeout-ms: "
                                       + line.strip().splitlines()[0][:120])
            print(f"note: {timeout_flags['reason']}; started without them, the timeout cases "
                  "fail")
        ok, line = self._spawn(flags)
        if not ok:
            raise RuntimeError(f"server did not start: {line!r}")

    def _spawn(self, args):
        self.proc = subprocess.Popen([self.binary, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=server_env())
        # The first line says where it listens; a bad flag gets the usage and exit status 2.
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout=budget(10.0))
        sel.close()
        line = self.proc.stdout.readline() if ready else ""
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        if m:
            self.port = int(m.group(1))
            return True, line
        rest = ""
        try:
            rest, _ = self.proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return False, line + (rest or "")

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """Stops the server by its PID; returns a problem or None."""
        if self.proc.poll() is not None:
            return f"server died during the case (exit status {self.proc.returncode})"
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=max(1.0, min(5.0, remaining() + 1.5)))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "server did not stop on SIGTERM (killed)"
        if self.proc.returncode != 0:
            return f"server exited with status {self.proc.returncode} on SIGTERM"
        return None


def server_env():
    """The server's environment. Under AddressSanitizer (the sanitizer suites export
    ASAN_OPTIONS) freed memory is held in a quarantine of up to 256 MiB to catch use after free:
    RSS would measure the quarantine, not the server. A 4 MiB quarantine keeps the checking and
    lets the memory cases measure what the server holds."""
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:
        opts = env["ASAN_OPTIONS"]
        env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + \
            "quarantine_size_mb=4:thread_local_quarantine_size_kb=256"
    return env


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of the whole process (all threads), in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": field 3 is fields[0]
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def mb(n):
    return f"{n / MIB:.1f} MB"


# ---------------------------------------------------------------------------------------------
# sockets and HTTP framing


def connect(port, timeout=3.0, nodelay=False):
    s = socket.create_connection((HOST, port), timeout=max(0.1, budget(timeout)))
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


CONTENT_LENGTH = re.compile(rb"\r\ncontent-length[ \t]*:[ \t]*(\d+)", re.I)


def header(head, name):
    """The value of header name in the raw head (bytes), or None."""
    m = re.search(rb"\r\n" + re.escape(name) + rb"[ \t]*:[ \t]*([^\r\n]*)", head, re.I)
    return m.group(1).strip() if m else None


def parse_response(buf, pos, eof=False):
    """One response of buf from pos, framed by Content-Length: (head, body, next_pos), or None
    when it is not all there yet. Without Content-Length (nor chunking) the body runs to EOF."""
    end = buf.find(b"\r\n\r\n", pos)
    if end < 0:
        return None
    head = bytes(buf[pos:end])
    start = end + 4
    m = CONTENT_LENGTH.search(head)
    if m:
        stop = start + int(m.group(1))
        if stop > len(buf):
            return None
        return head, bytes(buf[start:stop]), stop
    status = head[9:12]
    if status in (b"204", b"304") or status.startswith(b"1"):
        return head, b"", start
    if header(head, b"Transfer-Encoding") is not None:
        return decode_chunked(buf, head, start)
    if not eof:
        return None
    return head, bytes(buf[start:]), len(buf)


def decode_chunked(buf, head, pos):
    body = bytearray()
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
        pos = eol + 2
        if size == 0:
            end = buf.find(b"\r\n\r\n", pos - 2)
            return (head, bytes(body), end + 4) if end >= 0 else None
        if pos + size + 2 > len(buf):
            return None
        body += buf[pos:pos + size]
        pos += size + 2


def read_until_close(s, timeout):
    """Reads until the peer closes (or resets) or timeout: (data, how) with how one of 'eof',
    'reset', 'timeout'."""
    data = bytearray()
    end = time.monotonic() + budget(timeout)
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return bytes(data), "timeout"
        s.settimeout(left)
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return bytes(data), "timeout"
        except ConnectionResetError:
            return bytes(data), "reset"
        except OSError as e:
            return bytes(data), f"error {e.errno}"
        if not chunk:
            return bytes(data), "eof"
        data += chunk


def read_responses(s, count, timeout, then_eof=False):
    """Reads count responses (head, body); with then_eof, keeps reading until the peer closes.
    Returns (responses, trailing bytes, how the reading ended)."""
    data = bytearray()
    responses = []
    pos = 0
    end = time.monotonic() + budget(timeout)
    how = "timeout"
    while True:
        while len(responses) < count:
            r = parse_response(data, pos)
            if r is None:
                break
            responses.append((r[0], r[1]))
            pos = r[2]
        if len(responses) >= count and not then_eof:
            how = "done"
            break
        left = end - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            how = "reset"
            break
        except OSError as e:
            how = f"error {e.errno}"
            break
        if not chunk:
            how = "eof"
            break
        data += chunk
    if how in ("eof", "reset") and len(responses) < count:
        r = parse_response(data, pos, eof=True)
        if r is not None:
            responses.append((r[0], r[1]))
            pos = r[2]
    return responses, bytes(data[pos:]), how


def status_of(head):
    return head.split(b"\r\n", 1)[0].decode("latin-1")


def describe(responses, trailing=b"", how=""):
    parts = [status_of(h)[9:12] + ("+close" if (header(h, b"Connection") or b"").lower()
                                   == b"close" else "") for h, _ in responses]
    text = "[" + ", ".join(parts) + "]"
    if trailing:
        text += f" +{len(trailing)} stray bytes {trailing[:40]!r}"
    if how:
        text += f" then {how}"
    return text


def is_close(head):
    return (header(head, b"Connection") or b"").lower() == b"close"


# ---------------------------------------------------------------------------------------------
# case 1: a pipelining client that never reads


def case_nonreading_pipeline(server):
    name = "non-reading pipelining client"
    SEND_PHASE = 10.0
    RSS_LIMIT, CPU_LIMIT = 32 * MIB, 5.0
    SAFETY_RSS = 512 * MIB    # stop sending past this growth: protect the (shared) machine
    SAFETY_REQUESTS = 2_000_000  # and bound what is read back after
    if remaining() < SEND_PHASE + 8:
        return check(name, False, detail="no time left in the 90 s budget")
    warm_up(server.port)
    rss0 = rss_bytes(server.pid)
    s = connect(server.port)
    s.setblocking(False)
    L = len(PLAINTEXT_GET)
    stream = PLAINTEXT_GET * 2048  # ~72 KiB of whole requests; sends start at sent % L
    sent = 0
    start = time.monotonic()
    stop_at = start + SEND_PHASE
    cpu_mark_at = start + SEND_PHASE - 5.0
    cpu_mark = None
    blocked_since = None
    stopped_why = "10 s elapsed"
    peak_rss = rss0
    next_sample = start
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_WRITE)
    while True:
        now = time.monotonic()
        if cpu_mark is None and now >= cpu_mark_at:
            cpu_mark = (now, cpu_seconds(server.pid))
        if now >= next_sample:
            peak_rss = max(peak_rss, rss_bytes(server.pid))
            next_sample = now + 0.25
            if peak_rss - rss0 > SAFETY_RSS:
                stopped_why = f"server RSS grew past {mb(SAFETY_RSS)}: sending stopped at " \
                              f"{now - start:.1f} s"
                break
        if now >= stop_at:
            break
        if sent // L >= SAFETY_REQUESTS:
            stopped_why = f"{SAFETY_REQUESTS} requests sent: sending stopped at " \
                          f"{now - start:.1f} s"
            break
        if not sel.select(timeout=min(0.1, stop_at - now)):
            if blocked_since is None:
                blocked_since = now
            continue
        try:
            n = s.send(stream[sent % L:])
        except BlockingIOError:
            n = 0
        except OSError as e:
            stopped_why = f"send failed: {e}"
            break
        if n:
            sent += n
            blocked_since = None
    sel.close()
    # Wait out the 10 s when a safety stop came first: the CPU and RSS figures are at 10 s.
    while time.monotonic() < stop_at and stopped_why != "10 s elapsed":
        time.sleep(min(0.2, stop_at - time.monotonic()))
        if cpu_mark is None and time.monotonic() >= cpu_mark_at:
            cpu_mark = (time.monotonic(), cpu_seconds(server.pid))
    end = time.monotonic()
    cpu_end = cpu_seconds(server.pid)
    rss1 = rss_bytes(server.pid)
    peak_rss = max(peak_rss, rss1)
    if cpu_mark is None:
        cpu_mark = (start, 0.0)
    cpu_pct = 100.0 * (cpu_end - cpu_mark[1]) / max(1e-6, end - cpu_mark[0])
    blocked_for = f", send blocked for the last {end - blocked_since:.1f} s" \
        if blocked_since is not None else ", send never blocked for long"
    requests = -(-sent // L)  # a request cut short is completed below, so it counts
    growth = rss1 - rss0
    check_memory(server, f"{name}: server RSS growth < 32 MB", growth < RSS_LIMIT,
                 f"{mb(growth)} ({mb(rss0)} -> {mb(rss1)}) with {requests} requests sent in "
                 f"{end - start:.1f} s{blocked_for}",
                 f"{mb(growth)} ({mb(rss0)} -> {mb(rss1)}) with {requests} requests sent; "
                 f"{stopped_why}{blocked_for}")
    check(f"{name}: server CPU over the last 5 s < 5 %", cpu_pct < CPU_LIMIT,
          f"{cpu_pct:.1f} % of one core" + ("" if stopped_why == "10 s elapsed" else
                                             f" (the client stopped sending: {stopped_why})"))
    # Now read everything, and finish the request that was cut short.
    expected = requests
    rest = stream[sent % L:L] if sent % L else b""
    data = bytearray()
    pos = 0
    got = 0
    bad = None
    how = "timeout"
    read_end = time.monotonic() + budget(20.0)
    s.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ | (selectors.EVENT_WRITE if rest else 0))
    while got < expected and bad is None:
        left = read_end - time.monotonic()
        if left <= 0:
            break
        events = sel.select(timeout=min(0.5, left))
        for _, mask in events:
            if mask & selectors.EVENT_WRITE and rest:
                try:
                    n = s.send(rest)
                    rest = rest[n:]
                except BlockingIOError:
                    pass
                except OSError as e:
                    how = f"finishing the last request failed: {e}"
                    bad = how
                if not rest:
                    sel.modify(s, selectors.EVENT_READ)
            if mask & selectors.EVENT_READ:
                try:
                    chunk = s.recv(1 << 20)
                except BlockingIOError:
                    continue
                except OSError as e:
                    how = f"recv failed: {e}"
                    bad = how
                    break
                if not chunk:
                    how = "server closed the connection"
                    bad = how
                    break
                data += chunk
                while True:
                    end_of_head = data.find(b"\r\n\r\n", pos)
                    if end_of_head < 0:
                        break
                    m = CONTENT_LENGTH.search(data, pos, end_of_head)
                    if not data.startswith(b"HTTP/1.1 200", pos) or m is None:
                        bad = f"response {got + 1}: {bytes(data[pos:end_of_head])[:80]!r}"
                        break
                    body_end = end_of_head + 4 + int(m.group(1))
                    if body_end > len(data):
                        break
                    if data[end_of_head + 4:body_end] != HELLO:
                        bad = f"response {got + 1} body {bytes(data[end_of_head + 4:body_end])!r}"
                        break
                    got += 1
                    pos = body_end
                if pos > (4 << 20):
                    del data[:pos]
                    pos = 0
    sel.close()
    # Nothing more may come: one response per request.
    extra = b""
    if bad is None and got == expected:
        s.settimeout(max(0.05, budget(0.5)))
        try:
            extra = bytes(data[pos:]) + s.recv(65536)
        except socket.timeout:
            extra = bytes(data[pos:])
        except OSError:
            extra = bytes(data[pos:])
    s.close()
    ok = bad is None and got == expected and not extra
    detail = bad or (f"{got} of {expected} responses read before the read deadline ({how})"
                     if got != expected else f"{len(extra)} stray bytes after the last response")
    check(f"{name}: one 200 Hello, World! per request, in order", ok,
          f"{got}/{expected} responses", detail)
    stopped = "" if stopped_why == "10 s elapsed" else f" ({stopped_why})"
    figure("1 non-reading pipeline", f"{requests} req sent{stopped}, RSS +{mb(growth)} "
           f"at 10 s, CPU over 5-10 s {cpu_pct:.1f} % of a core, {got}/{expected} responses "
           "back")


def warm_up(port):
    """One request first, so the baselines include what the first connection allocates."""
    try:
        with connect(port) as s:
            s.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            read_until_close(s, 2.0)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# case 2: slowloris


class SteadyClient(threading.Thread):
    """A well-behaved client: GET /plaintext every 100 ms on a keep-alive connection."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop_event = threading.Event()
        self.latencies = []
        self.failures = []

    def run(self):
        s = None
        while not self.stop_event.is_set():
            t = time.monotonic()
            try:
                if s is None:
                    s = connect(self.port, timeout=2.0)
                s.sendall(PLAINTEXT_GET)
                responses, _, how = read_responses(s, 1, 2.0)
                if not responses:
                    raise OSError(f"no response ({how})")
                head, body = responses[0]
                if not head.startswith(b"HTTP/1.1 200") or body != HELLO:
                    raise OSError(f"got {status_of(head)!r} body {body[:20]!r}")
                self.latencies.append(time.monotonic() - t)
            except OSError as e:
                self.failures.append(f"{time.monotonic() - T0:.1f}s: {e}")
                if s is not None:
                    s.close()
                s = None
            self.stop_event.wait(max(0.0, 0.1 - (time.monotonic() - t)))
        if s is not None:
            s.close()


def case_slowloris(server):
    name = "slowloris"
    N = 200
    limit = (HEADER_TIMEOUT_MS / 1000.0) + 1.0  # the timeouts are both 2 s
    WATCH_EXTRA = 1.5  # watch this much past the limit, to report how late the closes are
    if remaining() < limit + WATCH_EXTRA + 3:
        return check(name, False, detail="no time left in the 90 s budget")
    steady = SteadyClient(server.port)
    steady.start()
    partial = b"GET /plaintext HTTP/1.1\r\nHost: x\r\nX-a: "
    body_head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"
    conns = []  # [socket, kind, last byte time, data, closed at or None, how]
    open_errors = []
    for i in range(2 * N):
        kind = "head" if i < N else "body"
        if remaining() < limit + 2:
            open_errors.append(f"out of time after {i} connections")
            break
        try:
            s = connect(server.port, timeout=2.0)
            s.sendall(partial if kind == "head" else body_head)
            conns.append([s, kind, time.monotonic(), bytearray(), None, None])
        except OSError as e:
            open_errors.append(f"{kind} {i}: {e}")
    opened = time.monotonic()
    sel = selectors.DefaultSelector()
    for c in conns:
        c[0].setblocking(False)
        sel.register(c[0], selectors.EVENT_READ, c)
    watch_end = (max(c[2] for c in conns) if conns else opened) + limit + WATCH_EXTRA
    watch_end = min(watch_end, time.monotonic() + budget(limit + WATCH_EXTRA + 1))
    open_count = len(conns)
    while open_count and time.monotonic() < watch_end:
        for key, _ in sel.select(timeout=max(0.0, min(0.05, watch_end - time.monotonic()))):
            c = key.data
            try:
                chunk = c[0].recv(65536)
            except BlockingIOError:
                continue
            except OSError as e:
                chunk, c[5] = b"", "reset" if e.errno == errno.ECONNRESET else f"errno {e.errno}"
            if chunk:
                c[3] += chunk
                continue
            c[4] = time.monotonic()
            c[5] = c[5] or "eof"
            sel.unregister(c[0])
            open_count -= 1
    sel.close()
    steady.stop_event.set()
    steady.join(timeout=3.0)
    for c in conns:
        c[0].close()
    for kind, label in (("head", "partial heads"), ("body", "bodies 3 of 10 bytes")):
        group = [c for c in conns if c[1] == kind]
        closed = [c for c in group if c[4] is not None]
        times = [c[4] - c[2] for c in closed]
        in_time = [t for t in times if t <= limit]
        worst = max(times) if times else None
        got = {}
        for c in group:
            key = status_of(bytes(c[3]))[:12] if c[3] else "nothing"
            got[key] = got.get(key, 0) + 1
        got_text = ", ".join(f"{k} x{v}" for k, v in sorted(got.items()))
        resets = sum(1 for c in closed if c[5] == "reset")
        fig = (f"{len(in_time)}/{N} closed within {limit:.0f} s, max close "
               f"{worst:.2f} s" if worst is not None else f"0/{N} closed within {limit:.0f} s")
        fig += f"; read: {got_text}" + (f"; {resets} resets" if resets else "")
        reason = "" if timeout_flags["supported"] else \
            "; the server has no --header-timeout-ms/--body-timeout-ms flags"
        good = len(in_time) == N
        check(f"{name}: {N} {label} closed within {limit:.0f} s of their last byte", good, fig,
              fig + (f"; {len(group) - len(closed)} still open after "
                     f"{limit + WATCH_EXTRA:.1f} s" if len(closed) < N else "") + reason +
              (f"; could not open: {open_errors[:2]}" if open_errors else ""))
        if kind == "head":
            wrong = {k: v for k, v in got.items() if k not in ("nothing", "HTTP/1.1 408")}
            check(f"{name}: partial heads read 408 (if anything) before the close", not wrong,
                  f"read: {got_text}", f"read: {got_text}")
        figure(f"2 slowloris {kind}", fig)
    lat = steady.latencies
    lat_text = (f"{len(lat)} requests, latency max {max(lat) * 1000:.1f} ms, median "
                f"{sorted(lat)[len(lat) // 2] * 1000:.1f} ms" if lat else "no request answered")
    check(f"{name}: a normal client meanwhile gets 200 every 100 ms",
          lat and not steady.failures, lat_text,
          lat_text + f"; {len(steady.failures)} failures, first: {steady.failures[:2]}")
    figure("2 slowloris normal client", lat_text)


# ---------------------------------------------------------------------------------------------
# case 3: long chunk extensions (3a), one-byte chunks (3b)


def case_chunk_extensions(server):
    name = "chunks with 1000-byte extensions"
    RSS_LIMIT = 8 * MIB
    MAX_EXTENSION_BYTES = 16 * MIB  # stop there (256 x the 64 KiB limit the server will have)
    SEND_BUDGET = 3.0
    if remaining() < SEND_BUDGET + 3:
        return check(name, False, detail="no time left in the 90 s budget")
    warm_up(server.port)
    rss0 = rss_bytes(server.pid)
    peak = rss0
    s = connect(server.port, nodelay=True)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    ext = b"e=" + b"x" * 1000
    chunk = b"1;" + ext + b"\r\nX\r\n"
    chunks = 0
    start = time.monotonic()
    stop = start + budget(SEND_BUDGET)
    why = f"{SEND_BUDGET:.0f} s of sending"
    answered = False
    s.settimeout(2.0)
    probe = selectors.DefaultSelector()
    probe.register(s, selectors.EVENT_READ)
    while True:
        if chunks % 64 == 0:
            if time.monotonic() >= stop:
                break
            if chunks * (len(ext) + 1) >= MAX_EXTENSION_BYTES:
                why = f"{mb(MAX_EXTENSION_BYTES)} of extensions sent"
                break
            if probe.select(timeout=0):
                answered = True
                why = "server answered"
                break
            if chunks % 1024 == 0:
                peak = max(peak, rss_bytes(server.pid))
        try:
            s.sendall(chunk)  # one send per chunk
        except socket.timeout:
            why = "send blocked for 2 s"
            break
        except OSError as e:
            why = f"send failed ({e.__class__.__name__})"
            answered = True
            break
        chunks += 1
    probe.close()
    elapsed = time.monotonic() - start
    peak = max(peak, rss_bytes(server.pid))
    ext_bytes = chunks * (len(ext) + 1)  # ";e=xxx..." per chunk
    if answered:
        responses, trailing, how = read_responses(s, 1, 2.0, then_eof=True)
        outcome_ok = bool(responses) and status_of(responses[0][0]).startswith("HTTP/1.1 400")
        outcome = f"answered {describe(responses, trailing, how)} (seen when {chunks} chunks, " \
                  f"{mb(ext_bytes)} of extensions, were sent)"
    else:
        try:
            s.sendall(b"0\r\n\r\n")
        except OSError as e:
            pass
        responses, trailing, how = read_responses(s, 1, 5.0)
        how = "" if how == "done" else how
        outcome_ok = bool(responses) and responses[0][0].startswith(b"HTTP/1.1 200") and \
            responses[0][1] == b"X" * chunks
        outcome = f"no limit met in {chunks} chunks ({mb(ext_bytes)} of extensions); " \
                  f"last chunk -> {describe(responses, trailing, how)}" + \
                  (f" body {len(responses[0][1])} bytes" if responses else "")
    s.close()
    peak = max(peak, rss_bytes(server.pid))
    growth = peak - rss0
    check_memory(server, f"{name}: server RSS growth < 8 MB", growth < RSS_LIMIT,
                 f"{mb(growth)} over {chunks} chunks in {elapsed:.2f} s ({why})")
    check(f"{name}: a 400 at the server's limit, or the whole body echoed", outcome_ok, outcome)
    figure("3a chunk extensions", f"{chunks} chunks / {mb(ext_bytes)} ext in {elapsed:.2f} s, "
           f"RSS +{mb(growth)}; {outcome}")


def case_tiny_chunks(server):
    name = "200,000 one-byte chunks"
    RSS_LIMIT = 8 * MIB
    N = 200_000
    if remaining() < 10:
        return check(name, False, detail="no time left in the 90 s budget")
    warm_up(server.port)
    rss0 = rss_bytes(server.pid)
    peak = rss0
    s = connect(server.port, nodelay=True)
    s.settimeout(2.0)
    start = time.monotonic()
    stop = start + budget(15.0)
    why = None
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        one = b"1\r\nX\r\n"
        for i in range(N):
            s.sendall(one)  # one send per chunk
            if i % 4096 == 0:
                peak = max(peak, rss_bytes(server.pid))
                if time.monotonic() > stop:
                    why = f"out of time after {i} chunks"
                    break
        else:
            s.sendall(b"0\r\n\r\n")
    except OSError as e:
        why = f"send failed: {e}"
    elapsed = time.monotonic() - start
    peak = max(peak, rss_bytes(server.pid))
    responses, trailing, how = read_responses(s, 1, 5.0)
    peak = max(peak, rss_bytes(server.pid))
    s.close()
    how = "" if how == "done" else how
    growth = peak - rss0
    ok = why is None and len(responses) == 1 and responses[0][0].startswith(b"HTTP/1.1 200") \
        and responses[0][1] == b"X" * N
    got = describe(responses, trailing, how) + \
        (f" body {len(responses[0][1])} bytes" if responses else "")
    check(f"{name}: 200 with the 200,000 bytes echoed", ok,
          f"{got} in {elapsed:.1f} s", (why + "; " if why else "") + got)
    check_memory(server, f"{name}: server RSS growth < 8 MB", growth < RSS_LIMIT,
                 f"{mb(growth)} ({mb(rss0)} -> peak {mb(peak)})")
    figure("3b one-byte chunks", f"200000 chunks sent in {elapsed:.1f} s, RSS +{mb(growth)}, "
           f"{got}")


# ---------------------------------------------------------------------------------------------
# case 4: RFC items over the socket


def exchange(port, wire, count, timeout=2.0):
    """Sends wire in one send, reads count responses then until the server closes."""
    with connect(port) as s:
        s.sendall(wire)
        return read_responses(s, count, timeout, then_eof=True)


def case_rfc(server):
    port = server.port
    figs = []
    # (a) a malformed request between two good ones, all in one send
    name = "malformed 2nd of 3 pipelined"
    wire = (PLAINTEXT_GET + b"GET /plaintext HTTP/1.1\r\nHost : x\r\n\r\n" + PLAINTEXT_GET)
    responses, trailing, how = exchange(port, wire, 3)
    got = describe(responses, trailing, how)
    ok = (len(responses) == 2 and responses[0][0].startswith(b"HTTP/1.1 200") and
          responses[0][1] == HELLO and responses[1][0].startswith(b"HTTP/1.1 400") and
          is_close(responses[1][0]) and not trailing and how == "eof")
    check(f"{name}: 200, then 400 with Connection: close, then EOF", ok, got,
          f"got {got}")
    figs.append(f"(a) {got}")

    # (b) Connection: close, and HTTP/1.0 without keep-alive, each followed by a second GET
    for label, first, version in (
            ("Connection: close", b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close"
                                  b"\r\n\r\n", b"HTTP/1.1 200"),
            ("HTTP/1.0", b"GET /plaintext HTTP/1.0\r\nHost: x\r\n\r\n", b"HTTP/1.0 200")):
        name = f"{label} then a 2nd GET in the same send"
        responses, trailing, how = exchange(port, first + PLAINTEXT_GET, 2)
        got = describe(responses, trailing, how)
        ok = (len(responses) == 1 and responses[0][0].startswith(version) and
              responses[0][1] == HELLO and not trailing and how == "eof" and
              (version.startswith(b"HTTP/1.0") or is_close(responses[0][0])) and
              (header(responses[0][0], b"Connection") or b"").lower() != b"keep-alive")
        check(f"{name}: one response, then EOF", ok, got, f"got {got}")
        figs.append(f"(b) {label}: {got}")

    # (c) Host values
    for value, good in ((b"bad host", False), (b"user@host", False),
                        (b"host:port-not-a-number", False), (b"h:99999", False),
                        (b"example.com:8080", True), (b"[::1]:80", True)):
        name = f"Host: {value.decode()}"
        if remaining() < 2.5:
            check(name, False, detail="no time left in the 90 s budget")
            continue
        wire = b"GET /plaintext HTTP/1.1\r\nHost: " + value + b"\r\n\r\n"
        if good:
            with connect(port) as s:
                s.sendall(wire)
                responses, trailing, how = read_responses(s, 1, 2.0)
            got = describe(responses, trailing)
            ok = len(responses) == 1 and responses[0][0].startswith(b"HTTP/1.1 200")
            check(f"{name} -> 200", ok, got, f"got {got} ({how})")
        else:
            responses, trailing, how = exchange(port, wire, 1)
            got = describe(responses, trailing, how)
            ok = (len(responses) == 1 and responses[0][0].startswith(b"HTTP/1.1 400") and
                  is_close(responses[0][0]) and how == "eof" and not trailing)
            check(f"{name} -> 400 and close", ok, got, f"got {got}")
        figs.append(f"Host {value.decode()}: {got}")
    figure("4 RFC", "; ".join(figs))


# ---------------------------------------------------------------------------------------------
# case 5: a body over the limit


def case_oversized_body(server):
    SIZE = 2 * MIB
    head = (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
            b"Content-Length: %d\r\n\r\n" % SIZE)
    body = b"B" * SIZE
    for label, pieces in (("in one go", None), ("in 64 KiB pieces", 64 * 1024)):
        name = f"2 MB body {label}"
        if remaining() < 8:
            check(name, False, detail="no time left in the 90 s budget")
            continue
        s = connect(server.port)
        s.settimeout(3.0)
        sent = 0
        send_error = None
        start = time.monotonic()
        try:
            if pieces is None:
                s.sendall(head + body)
                sent = SIZE
            else:
                s.sendall(head)
                for off in range(0, SIZE, pieces):
                    s.sendall(body[off:off + pieces])
                    sent = off + pieces
                    time.sleep(0.01)
        except socket.timeout:
            send_error = "send blocked for 3 s"
        except OSError as e:
            send_error = e.__class__.__name__
        data, how = read_until_close(s, 3.0)
        s.close()
        elapsed = time.monotonic() - start
        line = data.split(b"\r\n", 1)[0].decode("latin-1") if data else "nothing"
        sent_text = f"the whole body sent" if send_error is None else \
            f"send stopped ({send_error})" + (f" after {mb(sent)}" if pieces else "")
        fig = f"read {line!r} then {how}; {sent_text}, {elapsed:.1f} s"
        check(f"{name}: the 413 is read, not a reset", data.startswith(b"HTTP/1.1 413"), fig)
        figure(f"5 2 MB body {label}", fig)


# ---------------------------------------------------------------------------------------------
# case 6: a good request with a body, then a malformed one


def case_graceful(server):
    good = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"
    bad = b"GET /plaintext HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n"
    figs = []
    name = "body then malformed, one send"
    responses, trailing, how = exchange(server.port, good + bad, 2)
    got = describe(responses, trailing, how)
    ok = (len(responses) == 2 and responses[0][0].startswith(b"HTTP/1.1 200") and
          responses[0][1] == b"0123456789" and responses[1][0].startswith(b"HTTP/1.1 400") and
          is_close(responses[1][0]) and not trailing and how == "eof")
    check(f"{name}: 200 with the body, then 400 and close", ok, got, f"got {got}")
    figs.append(f"one send: {got}")
    name = "body then malformed, two sends"
    with connect(server.port) as s:
        s.sendall(good)
        first, trailing1, how1 = read_responses(s, 1, 2.0)
        s.sendall(bad)
        second, trailing2, how2 = read_responses(s, 1, 2.0, then_eof=True)
    responses = first + second
    got = describe(responses, trailing1 + trailing2, how2)
    ok = (len(first) == 1 and first[0][0].startswith(b"HTTP/1.1 200") and
          first[0][1] == b"0123456789" and not trailing1 and len(second) == 1 and
          second[0][0].startswith(b"HTTP/1.1 400") and is_close(second[0][0]) and
          not trailing2 and how2 == "eof")
    check(f"{name}: 200 with the body, then 400 and close", ok, got, f"got {got}")
    figs.append(f"two sends: {got}")
    figure("6 graceful", "; ".join(figs))


# ---------------------------------------------------------------------------------------------


CASES = [
    ("1 non-reading pipelining client", case_nonreading_pipeline),
    ("2 slowloris", case_slowloris),
    ("3a chunk extensions", case_chunk_extensions),
    ("3b one-byte chunks", case_tiny_chunks),
    ("4 RFC items", case_rfc),
    ("5 oversized body", case_oversized_body),
    ("6 graceful", case_graceful),
]


current = {"server": None, "case": None}
print_lock = threading.Lock()


def summary(figures_file):
    print(f"-- figures (for docs), run of {time.monotonic() - T0:.1f} s:")
    lines = [f"{case}: {text}" for case, text in figures]
    for line in lines:
        print("  " + line)
    if figures_file:
        with open(figures_file, "w") as f:
            f.write("\n".join(lines) + "\n")
    passed = sum(1 for r in results if r)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    sys.stdout.flush()
    return 0 if failed == 0 else 1


def watchdog(figures_file):
    """The last resort of the 90 s bound: a case still running then is a failure, the server
    is killed (by its PID) and the run ends."""
    with print_lock:
        check("run within 90 s", False,
              detail=f"the budget ran out in case {current['case']}: stopped there")
        server = current["server"]
        if server is not None and server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
            try:
                server.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        summary(figures_file)
        os._exit(1)


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    binary = args[0]
    figures_file = args[args.index("--figures") + 1] if "--figures" in args else None
    # 400 idle connections at once, and the server inherits the limit too.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 1 << 16
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError) as e:
            print(f"note: cannot raise RLIMIT_NOFILE from {soft} to {want}: {e}")
    timer = threading.Timer(TOTAL_BUDGET - 0.5 - (time.monotonic() - T0), watchdog,
                            args=(figures_file,))
    timer.daemon = True
    timer.start()
    for title, case in CASES:
        current["case"] = title
        print(f"-- case {title} (t={time.monotonic() - T0:.1f} s)")
        sys.stdout.flush()
        if remaining() < 3:
            check(title, False, detail="skipped: no time left in the 90 s budget")
            continue
        server = Server(binary)
        current["server"] = server
        try:
            server.start()
        except RuntimeError as e:
            check(title, False, detail=str(e))
            continue
        try:
            case(server)
        except Exception as e:  # a case that breaks is a failure, the others still run
            check(title, False, detail=f"the case raised {e.__class__.__name__}: {e}")
        finally:
            problem = server.stop()
            if problem:
                check(f"{title}: the server", False, detail=problem)
    timer.cancel()
    with print_lock:
        return summary(figures_file)


if __name__ == "__main__":
    sys.exit(main())
