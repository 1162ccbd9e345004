#!/usr/bin/env python3
"""Smoke test of examples/discard_server: starts it with --report on an ephemeral loopback port,
sends 1 MiB and 300,000 bytes from two connections, checks that nothing comes back (after the
client's FIN the server closes without a byte), that a once-a-second report line counts every
byte sent, and that the server prints the same total when stopped by its PID (SIGTERM).
Bounded: each step has a timeout. Usage: discard_smoke_test.py DISCARD_SERVER."""
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time

SERVER = sys.argv[1]
HOST = "127.0.0.1"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail})"))


def send_then_read_all(port, payload):
    """Sends payload, half-closes, and returns what the server sent before closing."""
    with socket.create_connection((HOST, port), timeout=20) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk


def main():
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "2", "--report"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout], daemon=True)
    sizes = (1 << 20, 300_000)
    total = sum(sizes)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        check("server starts and prints its port", m is not None, line)
        if not m:
            return 1
        port = int(m.group(1))
        reader.start()

        for size in sizes:
            got = send_then_read_all(port, os.urandom(size))
            check(f"{size} bytes sent, nothing comes back, the server closes", got == b"",
                  f"{len(got)} bytes back")

        report = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                l = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            r = re.search(r"MiB/s, (\d+) bytes in all", l)
            if r and int(r.group(1)) == total:
                report = l
                break
        check(f"a report line counts all {total} bytes", report is not None)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    check("server exits cleanly on SIGTERM", proc.returncode == 0, proc.returncode)
    if reader.is_alive():
        reader.join(timeout=10)  # the rest of the output, up to the end of the stream
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    check("the server prints the total when stopped",
          any(f"discarded {total} bytes" in l for l in rest), rest[-3:])
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
