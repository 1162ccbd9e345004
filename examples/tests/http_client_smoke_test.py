#!/usr/bin/env python3
"""Smoke test of examples/http_client against examples/http_echo_server: starts the server on a
free loopback port (--port 0), fetches with both API paths (coroutine, --futures), a POST with
-d and -H, a refused port and a malformed URL (non-zero exit, one line on stderr), then stops
the server by its PID. Bounded: every step has its own timeout.

    http_client_smoke_test.py PATH/TO/http_client PATH/TO/http_echo_server
"""
import re
import signal
import socket
import subprocess
import sys

client, server = sys.argv[1], sys.argv[2]
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


def run(*args):
    # Bytes, decoded by hand: text mode would turn the CRLFs under test into LFs.
    r = subprocess.run([client, *args], capture_output=True, timeout=30)
    r.stdout = r.stdout.decode("utf-8", "replace")
    r.stderr = r.stderr.decode("utf-8", "replace")
    return r


proc = subprocess.Popen([server, "--host", "127.0.0.1", "--port", "0", "--threads", "1"],
                        stdout=subprocess.PIPE, text=True)
try:
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    if not m:
        sys.exit(f"FAIL the server did not print its port: {line!r}")
    base = f"http://127.0.0.1:{m.group(1)}"

    for extra in ([], ["--futures"]):
        r = run(base + "/plaintext", *extra)
        name = "GET /plaintext " + (" ".join(extra) or "(coroutine)")
        check(name + ": exit 0", r.returncode == 0, r.stderr)
        check(name + ": status line", r.stdout.startswith("HTTP/1.1 200 OK\r\n"), repr(r.stdout))
        check(name + ": headers", "\r\nContent-Type: text/plain" in r.stdout, repr(r.stdout))
        check(name + ": body", r.stdout.endswith("\r\n\r\nHello, World!"), repr(r.stdout))

    r = run(base + "/echo", "-X", "PUT", "-d", "some body", "-H", "Content-Type: text/x-test")
    check("PUT with -d and -H: exit 0", r.returncode == 0, r.stderr)
    check("PUT with -d and -H: echoed body", r.stdout.endswith("\r\n\r\nsome body"), repr(r.stdout))
    check("PUT with -d and -H: content type", "Content-Type: text/x-test" in r.stdout,
          repr(r.stdout))

    # Options before the URL, as with curl.
    r = run("-X", "POST", "-d", "abc", "-H", "Content-Type: text/x-first", base + "/echo",
            "--futures")
    check("options before the URL: echoed body",
          r.returncode == 0 and r.stdout.endswith("\r\n\r\nabc"), (r.returncode, r.stdout))
    check("options before the URL: content type", "Content-Type: text/x-first" in r.stdout,
          repr(r.stdout))
    r = run("-X", "GET", "--futures")
    check("no URL: usage, exit 2", r.returncode == 2 and "usage" in r.stderr, r.stderr)
    r = run(base + "/a", base + "/b")
    check("two URLs: usage, exit 2", r.returncode == 2, r.stderr)

    r = run(base + "/headers", "-H", "X-Probe: 42", "--timeout-ms", "5000")
    check("GET with a header: the server saw it", "x-probe: 42" in r.stdout.lower(),
          repr(r.stdout))

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    free_port = s.getsockname()[1]
    s.close()
    for args, what in (([f"http://127.0.0.1:{free_port}/"], "refused port"),
                       (["ftp://127.0.0.1/"], "unsupported scheme"),
                       (["not a url"], "malformed URL")):
        r = run(*args)
        check(what + ": non-zero exit", r.returncode != 0)
        check(what + ": one line on stderr",
              r.stderr.startswith("http_client: ") and r.stderr.count("\n") == 1, repr(r.stderr))
        check(what + ": nothing on stdout", r.stdout == "", repr(r.stdout))
finally:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)

print(f"{passed} passed, {failures} failed")
sys.exit(1 if failures else 0)
