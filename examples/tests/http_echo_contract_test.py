#!/usr/bin/env python3
"""Contract test of the HTTP echo example server, with real clients: curl, Python's
http.client, and raw sockets for pipelining and bad requests. Starts the server binary given as
the first argument on an ephemeral loopback port and stops it (by its PID) at the end.
Prints 'N passed, M failed' and exits non-zero on any failure."""
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time

SERVER = sys.argv[1]
HOST = "127.0.0.1"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail})"))


def start_server():
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, int(m.group(1))


def raw_exchange(port, data, timeout=5.0):
    """Sends data, then reads until the server closes (or timeout)."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(data)
        chunks, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                c = s.recv(65536)
            except socket.timeout:
                break
            if not c:
                break
            chunks.append(c)
        return b"".join(chunks)


def recv_until(s, suffix):
    """Reads from socket s until what came ends with suffix (or the peer closes)."""
    data = b""
    while not data.endswith(suffix):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def curl(port, *args):
    out = subprocess.run(["curl", "-s", "--max-time", "5", *args],
                         capture_output=True, timeout=15)
    return out.returncode, out.stdout


def main():
    proc, port = start_server()
    base = f"http://{HOST}:{port}"
    try:
        # curl
        rc, body = curl(port, f"{base}/plaintext")
        check("curl GET /plaintext", rc == 0 and body == b"Hello, World!", body)
        rc, head = curl(port, "-i", f"{base}/plaintext")
        check("plaintext is text/plain", b"Content-Type: text/plain" in head, head)
        check("Date header", re.search(rb"Date: \w{3}, \d\d \w{3} \d{4} [\d:]{8} GMT", head)
              is not None, head)
        rc, body = curl(port, "-H", "Content-Type: application/x-thing", "--data-binary",
                        "payload \x01\x02 bytes", f"{base}/echo")
        check("curl POST echoes the body", body == b"payload \x01\x02 bytes", body)
        rc, head = curl(port, "-i", "-H", "Content-Type: application/x-thing", "--data-binary",
                        "x", f"{base}/echo")
        check("Content-Type copied", b"Content-Type: application/x-thing" in head, head)
        rc, body = curl(port, "-H", "Transfer-Encoding: chunked", "--data-binary", "chunked body",
                        f"{base}/up")
        check("curl chunked POST echoed", body == b"chunked body", body)
        rc, body = curl(port, "-H", "X-Custom: one", f"{base}/some/path?q=1")
        text = body.decode(errors="replace")
        check("no body: request line listed", text.startswith("GET /some/path?q=1 HTTP/1.1\n"), text)
        check("no body: headers listed", "X-Custom: one\n" in text and f"Host: {HOST}:{port}\n"
              in text, text)
        rc, head = curl(port, "-I", f"{base}/plaintext")
        check("HEAD has headers, no body", head.startswith(b"HTTP/1.1 200") and
              b"Content-Length: 13" in head and not head.endswith(b"Hello, World!"), head)
        big = os.urandom(300_000)
        out = subprocess.run(["curl", "-s", "--max-time", "10", "-H", "Expect: 100-continue",
                              "--data-binary", "@-", f"{base}/big"], input=big,
                             capture_output=True, timeout=20)
        check("Expect: 100-continue and a 300 KB body", out.stdout == big, len(out.stdout))
        # The interim 100 comes before the body is sent (not after curl's one-second wait), and
        # a body announced over the server's limit (1 MiB) is refused without being invited.
        with socket.create_connection((HOST, port), timeout=5) as s:
            s.sendall(b"POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      b"Content-Length: 5\r\n\r\n")
            interim = recv_until(s, b"\r\n\r\n")
            check("Expect: 100-continue answered before the body",
                  interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim)
            s.sendall(b"hello")
            final = recv_until(s, b"hello")
            check("then the body echoed", final.startswith(b"HTTP/1.1 200") and
                  final.endswith(b"hello"), final)
        refused = raw_exchange(port, b"POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                                     b"Content-Length: 2000000\r\n\r\n")
        check("a body announced over the limit: 413, not 100",
              refused.startswith(b"HTTP/1.1 413") and b"100 Continue" not in refused and
              b"Connection: close" in refused, refused[:200])

        # http.client: keep-alive over one connection, HTTP/1.0, Connection: close
        conn = http.client.HTTPConnection(HOST, port, timeout=5)
        for i in range(3):
            conn.request("POST", f"/k{i}", body=f"body {i}", headers={"Content-Type": "text/x"})
            r = conn.getresponse()
            data = r.read()
            check(f"http.client keep-alive request {i}", r.status == 200 and
                  data == f"body {i}".encode(), (r.status, data))
        check("one connection reused", conn.sock is not None)
        conn.request("GET", "/bye", headers={"Connection": "close"})
        r = conn.getresponse()
        r.read()
        check("Connection: close answered with close", r.getheader("Connection") == "close")
        conn.close()

        resp = raw_exchange(port, b"GET /plaintext HTTP/1.0\r\n\r\n")
        check("HTTP/1.0 closes after the answer", resp.startswith(b"HTTP/1.0 200") and
              resp.endswith(b"Hello, World!"), resp)
        resp = raw_exchange(port, b"GET /plaintext HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                            timeout=1.0)
        check("HTTP/1.0 keep-alive persists", b"Connection: keep-alive" in resp, resp)

        # pipelining over a raw socket: 16 requests in one write, answered in order
        reqs = b"".join(b"GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(15))
        reqs += b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        resp = raw_exchange(port, reqs)
        order = [int(m) for m in re.findall(rb"GET /p(\d+) HTTP/1.1\n", resp)]
        check("16 pipelined requests answered in order", order == list(range(15)) and
              resp.endswith(b"Hello, World!") and resp.count(b"HTTP/1.1 200 OK") == 16, order)

        # bad requests: a 4xx with Connection: close, then the server closes
        for wire, status in [(b"GET / HTTP/1.1\r\n\r\n", b"400"),
                             (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"414"),
                             (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"v" * 9000 + b"\r\n\r\n",
                              b"431"),
                             (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n", b"400"),
                             (b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n", b"400")]:
            resp = raw_exchange(port, wire)
            check(f"bad request -> {status.decode()}", resp.startswith(b"HTTP/1.1 " + status) and
                  b"Connection: close" in resp, resp[:80])
        check("server still alive", proc.poll() is None)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            results.append(False)
            print("FAIL server did not stop on SIGTERM")
    check("server exited cleanly", proc.returncode == 0, proc.returncode)
    passed = sum(1 for r in results if r)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
