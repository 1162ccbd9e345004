#!/usr/bin/env python3
"""Smoke test of the coroutine echo example (async_echo_server): starts it on an ephemeral
loopback port, runs the echo_client example and a few concurrent Python socket clients against it,
checks every echoed byte, and stops the server by its PID (SIGTERM). Bounded: each step has a
timeout. Usage: async_echo_smoke_test.py SERVER ECHO_CLIENT. Exits non-zero on any failure."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading

SERVER, CLIENT = sys.argv[1], sys.argv[2]
HOST = "127.0.0.1"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail})"))


def echo_once(port, payload, out, index):
    try:
        with socket.create_connection((HOST, port), timeout=10) as s:
            s.sendall(payload)
            got = b""
            while len(got) < len(payload):
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
            out[index] = got
    except OSError as e:
        out[index] = repr(e).encode()


def main():
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        check("server starts and prints its port", m is not None, line)
        if not m:
            return 1
        port = int(m.group(1))

        client = subprocess.run([CLIENT, "--host", HOST, "--port", str(port), "--size", "1000",
                                 "--count", "200"], capture_output=True, text=True, timeout=60)
        check("echo_client verifies 200 round trips of 1000 bytes", client.returncode == 0,
              client.stdout + client.stderr)

        payloads = [os.urandom(n) for n in (1, 4096, 300_000, 1 << 20)]
        echoed = [None] * len(payloads)
        threads = [threading.Thread(target=echo_once, args=(port, p, echoed, i))
                   for i, p in enumerate(payloads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        for p, e in zip(payloads, echoed):
            check(f"concurrent python client gets its {len(p)} bytes back", e == p,
                  f"{0 if e is None else len(e)} bytes")
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    check("server exits cleanly on SIGTERM", proc.returncode == 0, proc.returncode)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
