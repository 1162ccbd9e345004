#!/usr/bin/env python3
"""The HTTP echo example server behind HAProxy (Debian haproxy), with --proxy-protocol: HAProxy
relays curl's requests with `send-proxy` (version 1) and `send-proxy-v2`, and the server's
request dump shows curl's own address and port as the client address; keep-alive requests go
on after the header. Direct clients that do not send a header, send a malformed one or an
oversized version 2 header are refused with a close and no HTTP answer, and the server keeps
serving. Everything on 127.0.0.1 with ephemeral ports; both processes are stopped by their PIDs.
Prints 'N passed, M failed' and exits non-zero on any failure."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SERVER = sys.argv[1]
HOST = "127.0.0.1"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail!r})"))


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_server():
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "1",
                             "--proxy-protocol"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, int(m.group(1))


def start_haproxy(d, backend_port):
    v1, v2 = free_port(), free_port()
    cfg = os.path.join(d, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(f"""global
  maxconn 100
defaults
  mode tcp
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend v1
  bind {HOST}:{v1}
  default_backend echo_v1
frontend v2
  bind {HOST}:{v2}
  default_backend echo_v2
backend echo_v1
  server s1 {HOST}:{backend_port} send-proxy
backend echo_v2
  server s1 {HOST}:{backend_port} send-proxy-v2
""")
    proc = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection((HOST, v2), timeout=1).close()
            socket.create_connection((HOST, v1), timeout=1).close()
            return proc, v1, v2
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("haproxy did not start: " + proc.stdout.read())
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("haproxy did not listen")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def request_over(sock, path):
    """One keep-alive GET on sock; the response body (text) or None."""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        c = sock.recv(65536)
        if not c:
            return None
        data += c
    head, body = data.split(b"\r\n\r\n", 1)
    m = re.search(rb"content-length: (\d+)", head, re.I)
    if not m:
        return None
    while len(body) < int(m.group(1)):
        c = sock.recv(65536)
        if not c:
            return None
        body += c
    return body.decode(errors="replace")


def refused(port, payload):
    """Sends payload directly to the server; True when it closes without an HTTP answer."""
    with socket.create_connection((HOST, port), timeout=10) as s:
        if payload:
            s.sendall(payload)
        data = b""
        try:
            while True:
                c = s.recv(4096)
                if not c:
                    break
                data += c
        except (ConnectionResetError, socket.timeout):
            pass
        return b"HTTP/1.1" not in data


def main():
    if shutil.which("haproxy") is None:
        print("FAIL haproxy is not installed (scripts/install-deps.sh installs it)")
        return 1
    with tempfile.TemporaryDirectory() as d:
        server, port = start_server()
        haproxy = None
        try:
            haproxy, v1, v2 = start_haproxy(d, port)
            for version, front in (("v1", v1), ("v2", v2)):
                with socket.create_connection((HOST, front), timeout=10) as s:
                    me = "%s:%d" % s.getsockname()
                    dump = request_over(s, "/dump?x=1")
                    check(f"{version}: the dump names curl's address as the client",
                          dump is not None
                          and f"client-address: {me} (PROXY protocol {version})" in dump, dump)
                    again = request_over(s, "/plaintext")
                    check(f"{version}: keep-alive after the header", again == "Hello, World!",
                          again)
                r = subprocess.run(["curl", "-s", "--max-time", "10",
                                    f"http://{HOST}:{front}/plaintext"],
                                   capture_output=True, timeout=20)
                check(f"{version}: curl through haproxy", r.stdout == b"Hello, World!", r.stdout)

            check("a client without a PROXY header is refused",
                  refused(port, b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"))
            check("a malformed v1 header is refused",
                  refused(port, b"PROXY TCP4 1.2.3.999 5.6.7.8 1 2\r\nGET / HTTP/1.1\r\n\r\n"))
            big = (b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + (60000).to_bytes(2, "big"))
            check("an oversized v2 header is refused at once", refused(port, big))
            check("the server is still running", server.poll() is None)
            with socket.create_connection((HOST, v2), timeout=10) as s:
                check("and still serves through haproxy",
                      request_over(s, "/plaintext") == "Hello, World!")
        finally:
            if haproxy is not None:
                stop(haproxy)
            stop(server)
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
