#!/usr/bin/env python3
"""Content compression of the HTTP echo example server (--compress), with real clients: curl
(--compressed, and raw bytes decoded here with Python's gzip/zlib), curl's brotli and zstd
decoders when it has them, and a raw socket for pipelined requests with different
Accept-Encoding. Without Accept-Encoding the response must be identity. Starts the server binary
given as the first argument on an ephemeral loopback port and stops it (by its PID) at the end.
Prints 'N passed, M failed' and exits non-zero on any failure."""
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zlib

SERVER = sys.argv[1]
HOST = "127.0.0.1"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail!r:.300})"))


def start_server():
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "2",
                             "--compress"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, int(m.group(1))


def curl(*args):
    """Runs curl; returns (exit code, response headers as a dict of lower-case names, body)."""
    with tempfile.NamedTemporaryFile() as head:
        out = subprocess.run(["curl", "-s", "--max-time", "5", "-D", head.name, *args],
                             capture_output=True, timeout=15)
        text = open(head.name, "rb").read().decode("latin-1")
    headers = {}
    for line in text.split("\r\n")[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return out.returncode, headers, out.stdout


def curl_features():
    out = subprocess.run(["curl", "-V"], capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"^Features:(.*)$", out, re.M)
    return set(m.group(1).split()) if m else set()


def json_body(size):
    items, n = [], 0
    while n < size:
        item = {"id": len(items) * 7919 % 100003, "name": f"user{len(items) * 31 % 977}",
                "active": len(items) % 3 != 0, "score": (len(items) * 2654435761) % 10000}
        items.append(item)
        n += len(json.dumps(item)) + 2
    return json.dumps(items).encode()


def read_response(s):
    """Reads one Content-Length-framed response from socket s: (status, headers, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("connection closed in a response head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("connection closed in a response body")
        rest += chunk
    return int(lines[0].split()[1]), headers, rest[:length], rest[length:]


def main():
    proc, port = start_server()
    base = f"http://{HOST}:{port}"
    body = json_body(40_000)
    features = curl_features()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        f.write(body)
        f.flush()
        post = ["-H", "Content-Type: application/json", "--data-binary", f"@{f.name}"]
        try:
            # curl --compressed: curl asks for what it supports and decodes it.
            rc, h, got = curl("--compressed", *post, f"{base}/echo")
            check("curl --compressed: body round-trips", rc == 0 and got == body, (rc, h))
            check("curl --compressed: Content-Encoding set",
                  h.get("content-encoding") in ("br", "zstd", "gzip", "deflate"), h)
            check("Vary: Accept-Encoding", h.get("vary") == "Accept-Encoding", h)

            # Raw bytes decoded here.
            rc, h, raw = curl("-H", "Accept-Encoding: gzip", *post, f"{base}/echo")
            check("gzip: Content-Encoding gzip", h.get("content-encoding") == "gzip", h)
            check("gzip: Content-Length is the compressed size",
                  h.get("content-length") == str(len(raw)), (h, len(raw)))
            check("gzip: smaller than the body", len(raw) < len(body) // 3, len(raw))
            check("gzip: Python's gzip decodes it", gzip.decompress(raw) == body)
            rc, h, raw = curl("-H", "Accept-Encoding: deflate", *post, f"{base}/echo")
            check("deflate: Content-Encoding deflate", h.get("content-encoding") == "deflate", h)
            check("deflate: Python's zlib decodes it (zlib format)", zlib.decompress(raw) == body)
            rc, h, raw = curl("-H", "Accept-Encoding: gzip;q=0.5, deflate;q=0.8", *post,
                              f"{base}/echo")
            check("q-values: deflate preferred", h.get("content-encoding") == "deflate", h)
            rc, h, raw = curl("-H", "Accept-Encoding: *;q=0", *post, f"{base}/echo")
            check("*;q=0: identity", "content-encoding" not in h and raw == body, h)

            for coding, feature in (("br", "brotli"), ("zstd", "zstd")):
                if feature not in features:
                    print(f"skip {coding}: curl has no {feature} support")
                    continue
                rc, h, got = curl("--compressed", "-H", f"Accept-Encoding: {coding}", *post,
                                  f"{base}/echo")
                check(f"{coding}: Content-Encoding {coding}", h.get("content-encoding") == coding, h)
                check(f"{coding}: curl decodes it", rc == 0 and got == body, rc)

            # No Accept-Encoding: identity.
            rc, h, got = curl(*post, f"{base}/echo")
            check("no Accept-Encoding: identity", "content-encoding" not in h and got == body, h)
            check("no Accept-Encoding: Content-Length of the body",
                  h.get("content-length") == str(len(body)), h)
            # A small body is not worth compressing.
            rc, h, got = curl("-H", "Accept-Encoding: gzip", f"{base}/plaintext")
            check("small body: identity", "content-encoding" not in h and got == b"Hello, World!", h)
            # A request without a body is echoed as its head: padded over the threshold, a GET
            # is compressed and a HEAD is not.
            pad = ["-H", "Accept-Encoding: gzip", "-H", "X-Pad: " + "a" * 1500]
            rc, h, raw = curl(*pad, f"{base}/echo")
            check("GET of a long echo: gzip", rc == 0 and h.get("content-encoding") == "gzip"
                  and b"X-Pad: aaa" in gzip.decompress(raw), h)
            rc, h, _ = curl("-I", *pad, f"{base}/echo")
            check("HEAD: no Content-Encoding", rc == 0 and "content-encoding" not in h
                  and int(h.get("content-length", "0")) > 1500, (rc, h))

            # Pipelined requests with different Accept-Encoding: each response uses its own.
            codings = ["gzip", None, "deflate", "gzip;q=0", "gzip"]
            wire = b""
            for i, c in enumerate(codings):
                wire += (f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n").encode()
                if c:
                    wire += f"Accept-Encoding: {c}\r\n".encode()
                if i == len(codings) - 1:
                    wire += b"Connection: close\r\n"
                wire += b"\r\n" + body
            with socket.create_connection((HOST, port), timeout=10) as s:
                s.sendall(wire)
                leftover = b""
                ok = True
                for c in codings:
                    status, h, raw, leftover = read_response_with(s, leftover)
                    want = {"gzip": "gzip", "deflate": "deflate"}.get(c)
                    got_coding = h.get("content-encoding")
                    decoded = (gzip.decompress(raw) if got_coding == "gzip"
                               else zlib.decompress(raw) if got_coding == "deflate" else raw)
                    if status != 200 or got_coding != want or decoded != body:
                        ok = False
                        print(f"  pipelined {c!r}: status {status}, coding {got_coding!r}")
                check("pipelined responses keep their own request's coding, in order", ok)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def read_response_with(s, leftover):
    """read_response, starting with bytes already received."""
    class Prefixed:
        def __init__(self):
            self.pending = leftover

        def recv(self, n):
            if self.pending:
                data, self.pending = self.pending, b""
                return data
            return s.recv(n)
    return read_response(Prefixed())


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("timed out"))
    signal.alarm(90)
    sys.exit(main())
