#!/usr/bin/env python3
"""Smoke test of the TIME protocol examples (time_server, time_client): starts the server on an
ephemeral loopback port, checks that time_client prints a time within a few seconds of this
machine's clock, that a raw socket gets exactly 4 big-endian bytes (seconds since 1900) and
then the end of the stream, that time_client decodes 4 bytes that arrive one at a time, and that
it fails when a server closes without sending any. Stops the server by its PID (SIGTERM).
Bounded: each step has a timeout. Usage: time_smoke_test.py TIME_SERVER TIME_CLIENT."""
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

SERVER, CLIENT = sys.argv[1], sys.argv[2]
HOST = "127.0.0.1"
SECONDS_1900_TO_1970 = 2208988800
SLACK = 5  # seconds between the server's clock reading and ours
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail})"))


def run_client(port):
    return subprocess.run([CLIENT, "--host", HOST, "--port", str(port)], capture_output=True,
                          text=True, timeout=30)


def fake_server(send):
    """A one-connection listener on an ephemeral port; send(conn) runs for the connection."""
    listener = socket.create_server((HOST, 0))
    listener.settimeout(30)

    def serve():
        try:
            conn, _ = listener.accept()
            with conn:
                send(conn)
        finally:
            listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread


def send_bytewise(conn):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for b in struct.pack(">I", (SECONDS_1900_TO_1970 + 1_000_000_000) & 0xFFFFFFFF):
        conn.sendall(bytes([b]))
        time.sleep(0.05)  # separate segments, so the decoder sees the bytes in pieces


def main():
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        check("server starts and prints its port", m is not None, line)
        if not m:
            return 1
        port = int(m.group(1))

        for i in range(3):
            client = run_client(port)
            got = re.search(r"\(unix (\d+)\)", client.stdout)
            check(f"time_client run {i + 1} exits 0 and prints the time",
                  client.returncode == 0 and got is not None, client.stdout + client.stderr)
            if got:
                delta = int(got.group(1)) - time.time()
                check(f"time_client run {i + 1} is within {SLACK} s of the local clock",
                      abs(delta) <= SLACK, f"off by {delta:.1f} s")

        with socket.create_connection((HOST, port), timeout=10) as s:
            data = b""
            while True:
                chunk = s.recv(64)
                if not chunk:
                    break
                data += chunk
        check("a raw client gets exactly 4 bytes, then the server closes", len(data) == 4, data)
        if len(data) == 4:
            seconds = struct.unpack(">I", data)[0] - SECONDS_1900_TO_1970
            check("the 4 bytes are big-endian seconds since 1900",
                  abs(seconds - time.time()) <= SLACK, seconds)

        fake_port, thread = fake_server(send_bytewise)
        client = run_client(fake_port)
        thread.join(timeout=10)
        check("time_client decodes 4 bytes sent one at a time",
              client.returncode == 0 and "(unix 1000000000)" in client.stdout
              and "2001-09-09 01:46:40 UTC" in client.stdout, client.stdout + client.stderr)

        fake_port, thread = fake_server(lambda conn: None)
        client = run_client(fake_port)
        thread.join(timeout=10)
        check("time_client fails when the server closes without the time",
              client.returncode == 1 and "closed before the time arrived" in client.stderr,
              f"{client.returncode}: {client.stdout + client.stderr}")
    finally:
        proc.send_signal(signal.SIGTERM)
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
