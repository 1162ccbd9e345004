#!/usr/bin/env python3
"""Smoke test of examples/udp_echo_server: starts it on a free loopback port (--port 0), sends
a few datagrams from two clients (IPv4 loopback only), checks every echo, then stops the server
by its PID (SIGTERM) and expects a clean exit. Bounded: 30 s in all, 2 s per echo.

    udp_echo_smoke_test.py PATH/TO/udp_echo_server
"""
import re
import signal
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
DEADLINE = time.monotonic() + 30
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


def start_server(server):
    proc = subprocess.Popen([server, "--host", HOST, "--port", "0", "--threads", "2"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    if not m:
        proc.kill()
        proc.wait(timeout=5)
        sys.exit(f"FAIL the server did not print its port: {line!r}")
    return proc, int(m.group(1))


def echo(sock, port, payload):
    sock.sendto(payload, (HOST, port))
    data, sender = sock.recvfrom(65536)
    return data, sender


def main():
    proc, port = start_server(sys.argv[1])
    try:
        clients = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
        for c in clients:
            c.settimeout(2.0)
            c.bind((HOST, 0))
        for i in range(20):
            if time.monotonic() > DEADLINE:
                check("within the time limit", False)
                break
            client = clients[i % 2]
            payload = f"datagram {i} ".encode() + bytes((i * 7 + k) & 0xFF for k in range(i * 50))
            try:
                data, sender = echo(client, port, payload)
                check(f"echo {i} ({len(payload)} bytes)", data == payload and sender == (HOST, port),
                      f"got {len(data)} bytes from {sender}")
            except socket.timeout:
                check(f"echo {i}", False, "no answer within 2 s")
        # An empty datagram is a datagram too.
        try:
            data, _ = echo(clients[0], port, b"")
            check("empty datagram echoed", data == b"")
        except socket.timeout:
            check("empty datagram echoed", False, "no answer within 2 s")
        for c in clients:
            c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
            code = None
    check("server exits cleanly on SIGTERM", code == 0, f"exit code {code}")
    print(f"{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
