#!/usr/bin/env python3
"""Smoke test of the rpc examples: starts rpc_server on an ephemeral loopback port, runs
rpc_client against it (alone and two at once), checks a request framed by hand in Python (a
4-byte big-endian length, an id, 8-byte numbers) gets the right sum back, and that a malformed
frame closes the connection. Stops the server by its PID (SIGTERM). Bounded: each step has a
timeout. Usage: rpc_smoke_test.py RPC_SERVER RPC_CLIENT."""
import re
import signal
import socket
import struct
import subprocess
import sys

SERVER, CLIENT = sys.argv[1], sys.argv[2]
HOST = "127.0.0.1"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail})"))


def client_args(port, count, batch):
    return [CLIENT, "--host", HOST, "--port", str(port), "--count", str(count), "--batch",
            str(batch), "--numbers", "50"]


def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def main():
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "2",
                             "--work-ms", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        check("server starts and prints its port", m is not None, line)
        if not m:
            return 1
        port = int(m.group(1))

        client = subprocess.run(client_args(port, 200, 16), capture_output=True, text=True,
                                timeout=60)
        check("rpc_client gets 200 verified replies", client.returncode == 0 and
              "200 requests answered and verified" in client.stdout, client.stdout + client.stderr)

        pair = [subprocess.Popen(client_args(port, 100, 8), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True) for _ in range(2)]
        for i, p in enumerate(pair):
            out, _ = p.communicate(timeout=60)
            check(f"concurrent rpc_client {i + 1} gets 100 verified replies", p.returncode == 0,
                  out)

        numbers = [1, 2, 3, -10, 1 << 40]
        body = struct.pack(">I", 7) + b"".join(struct.pack(">q", n) for n in numbers)
        with socket.create_connection((HOST, port), timeout=10) as s:
            s.sendall(struct.pack(">I", len(body)) + body)
            reply = recv_exactly(s, 16)
            check("a hand-framed request gets [length 12][id 7][sum]",
                  reply == struct.pack(">IIq", 12, 7, sum(numbers)), reply.hex())

        with socket.create_connection((HOST, port), timeout=10) as s:
            s.sendall(struct.pack(">I", 3) + b"bad")
            check("a malformed request closes the connection", recv_exactly(s, 1) == b"")

        client = subprocess.run(client_args(port, 5, 1), capture_output=True, text=True,
                                timeout=60)
        check("the server still serves after the malformed request", client.returncode == 0,
              client.stdout + client.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    check("server exits cleanly on SIGTERM", proc.returncode == 0, proc.returncode)

    with socket.socket() as bound:  # bound but not listening: connections are refused
        bound.bind((HOST, 0))
        client = subprocess.run(client_args(bound.getsockname()[1], 1, 1), capture_output=True,
                                text=True, timeout=60)
    check("rpc_client exits 1 when it cannot connect", client.returncode == 1,
          client.stdout + client.stderr)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
