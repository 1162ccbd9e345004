#!/usr/bin/env python3
"""Smoke test of examples/file_server driven by curl: starts it on a free loopback port
(--port 0) over a temporary root, then checks a plain GET (body compared), HEAD, -z (304),
--range (206 with the right bytes), an unsatisfiable range (416), '..' and a symlink out of the
root (404), keep-alive after HEAD and after a file, and a 100 MB download while the
server's VmRSS (/proc/PID/status) is sampled: it must grow by less than 16 MB; the same for a
client that pipelines 8 requests for the 100 MB file and stops reading. Stops the server
by its PID (SIGTERM). Bounded: 120 s in all, 60 s per curl.

    file_server_smoke_test.py PATH/TO/file_server
"""
import hashlib
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"
DEADLINE = time.monotonic() + 120
failures = 0
passed = 0


def check(name, condition, detail=""):
    global failures, passed
    if condition:
        passed += 1
        print(f"ok   {name}")
    else:
        failures += 1
        print(f"FAIL {name} {detail}")


def start_server(server, root):
    proc = subprocess.Popen([server, "--root", root, "--host", HOST, "--port", "0",
                             "--threads", "1"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    if not m:
        proc.kill()
        proc.wait(timeout=5)
        sys.exit(f"FAIL the server did not print its port: {line!r}")
    return proc, int(m.group(1))


def curl(*args):
    """Runs curl; returns (status code, headers text, body bytes)."""
    with tempfile.NamedTemporaryFile() as headers, tempfile.NamedTemporaryFile() as body:
        r = subprocess.run(["curl", "-sS", "--max-time", "60", "-D", headers.name,
                            "-o", body.name, "-w", "%{http_code}", *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=70)
        code = int(r.stdout.decode() or "0")
        return code, open(headers.name, "rb").read().decode("latin-1"), open(body.name, "rb").read()


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    with tempfile.TemporaryDirectory() as base:
        root = os.path.join(base, "root")
        os.makedirs(os.path.join(root, "sub"))
        small = os.urandom(300_000)
        with open(os.path.join(root, "sub", "small.bin"), "wb") as f:
            f.write(small)
        with open(os.path.join(base, "secret.txt"), "w") as f:
            f.write("secret")
        os.symlink(os.path.join(base, "secret.txt"), os.path.join(root, "out"))
        big_path = os.path.join(root, "big.bin")
        big_size = 100 * 1024 * 1024
        with open(big_path, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(100):
                f.write(block)
        big_sha = hashlib.sha256(block * 100).hexdigest()

        proc, port = start_server(sys.argv[1], root)
        url = f"http://{HOST}:{port}"
        try:
            code, headers, body = curl(f"{url}/sub/small.bin")
            check("GET: 200", code == 200, code)
            check("GET: the file's bytes", body == small, len(body))
            check("GET: Content-Length", "Content-Length: 300000\r\n" in headers, headers)
            m = re.search(r"Last-Modified: ([^\r]+)\r\n", headers)
            check("GET: Last-Modified", m is not None, headers)

            # HEAD, then a GET on the same connection: a body after the HEAD's head would be
            # read as the GET's response.
            conn = http.client.HTTPConnection(HOST, port, timeout=10)
            conn.request("HEAD", "/sub/small.bin")
            r = conn.getresponse()
            head_body = r.read()
            check("HEAD: 200 with the length, no body",
                  r.status == 200 and r.getheader("Content-Length") == "300000"
                  and head_body == b"", (r.status, r.getheaders()))
            conn.request("GET", "/sub/small.bin", headers={"Range": "bytes=0-99"})
            r = conn.getresponse()
            check("HEAD: the next request on the connection is answered",
                  r.status == 206 and r.read() == small[:100], r.status)
            conn.close()

            code, _, body = curl("-z", m.group(1) if m else "x", f"{url}/sub/small.bin")
            check("-z Last-Modified: 304, no body", code == 304 and body == b"", code)
            code, _, body = curl("-z", "Sun, 06 Nov 1994 08:49:37 GMT", f"{url}/sub/small.bin")
            check("-z an older date: 200", code == 200 and body == small, code)

            code, headers, body = curl("--range", "1000-1999", f"{url}/sub/small.bin")
            check("--range: 206", code == 206, code)
            check("--range: the right bytes", body == small[1000:2000], len(body))
            check("--range: Content-Range", "Content-Range: bytes 1000-1999/300000" in headers,
                  headers)
            code, headers, _ = curl("--range", "400000-500000", f"{url}/sub/small.bin")
            check("unsatisfiable range: 416", code == 416, code)
            check("416: Content-Range */size", "Content-Range: bytes */300000" in headers,
                  headers)

            code, _, _ = curl("--path-as-is", f"{url}/../secret.txt")
            check("'..': 404", code == 404, code)
            code, _, _ = curl("--path-as-is", f"{url}/sub/%2e%2e/%2e%2e/secret.txt")
            check("encoded '..': 404", code == 404, code)
            code, _, _ = curl(f"{url}/out")
            check("symlink out of the root: 404", code == 404, code)

            # Two requests on one connection: curl reports reusing it.
            r = subprocess.run(["curl", "-sS", "-v", "--max-time", "60", "-o", "/dev/null",
                                f"{url}/sub/small.bin", "-o", "/dev/null", f"{url}/sub/small.bin"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=70,
                               text=True)
            check("keep-alive after a file response",
                  r.returncode == 0 and ("Re-using existing connection" in r.stderr
                                         or "Reusing existing connection" in r.stderr),
                  r.stderr[-400:])

            # 100 MB while sampling the server's RSS.
            before = rss_kb(proc.pid)
            peak = [before]
            stop = threading.Event()

            def sample():
                while not stop.is_set():
                    peak[0] = max(peak[0], rss_kb(proc.pid))
                    time.sleep(0.01)

            sampler = threading.Thread(target=sample)
            sampler.start()
            t0 = time.monotonic()
            r = subprocess.run(["curl", "-sS", "--max-time", "60", f"{url}/big.bin"],
                               stdout=subprocess.PIPE, timeout=70)
            elapsed = time.monotonic() - t0
            stop.set()
            sampler.join()
            check("100 MB: all bytes, intact",
                  len(r.stdout) == big_size and hashlib.sha256(r.stdout).hexdigest() == big_sha,
                  len(r.stdout))
            growth_mb = (peak[0] - before) / 1024
            print(f"     100 MB in {elapsed:.2f} s; server VmRSS {before} kB -> peak {peak[0]} kB"
                  f" (+{growth_mb:.1f} MB)")
            check("100 MB: server RSS growth under 16 MB", growth_mb < 16, f"{growth_mb:.1f} MB")
            # A client that asks for the 100 MB file (pipelined, 8 times) and stops reading:
            # the server waits on the socket buffer, its memory does not follow the file.
            stalled = socket.create_connection((HOST, port), timeout=10)
            stalled.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n" * 8)
            before = rss_kb(proc.pid)
            high = before
            for _ in range(100):
                high = max(high, rss_kb(proc.pid))
                time.sleep(0.01)
            first = stalled.recv(65536)
            stalled.close()
            check("a client that stops reading: answered, server RSS growth under 16 MB",
                  first.startswith(b"HTTP/1.1 200") and (high - before) / 1024 < 16,
                  f"{(high - before) / 1024:.1f} MB")
            code, _, body = curl(f"{url}/sub/small.bin")
            check("still serving after the stalled client left", code == 200 and body == small,
                  code)
            check("within the time limit", time.monotonic() < DEADLINE)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait(timeout=5)
            check("clean exit on SIGTERM", code == 0, code)
    print(f"{passed} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
