#!/usr/bin/env python3
"""Smoke test of a chat example server (chat_server or async_chat_server): starts it on an
ephemeral loopback port, connects three Python clients, checks the greetings, the join and leave
announcements and that every line reaches the others and not its sender; then starts a second
instance with --idle-seconds 1 and checks that a silent client gets the goodbye line and is
closed, and not before a second has passed. Each server is stopped by its PID (SIGTERM).
Bounded: every socket read has a timeout. Usage: chat_smoke_test.py SERVER. Exits non-zero on any
failure."""
import os
import re
import signal
import socket
import subprocess
import sys
import time

SERVER = sys.argv[1]
HOST = "127.0.0.1"
TIMEOUT = 10  # seconds, for every connect and every line read
results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail!r})"))
    return condition


class Client:
    """A line-oriented chat client; name is its address as the server sees it."""

    def __init__(self, port):
        self.sock = socket.create_connection((HOST, port), timeout=TIMEOUT)
        self.name = "%s:%d" % self.sock.getsockname()[:2]
        self.buffer = b""

    def line(self):
        """The next line without its newline; None at the end of the stream."""
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def say(self, text):
        self.sock.sendall(text.encode() + b"\n")

    def close(self):
        self.sock.close()


def expect(name, client, wanted):
    got = client.line()
    return check(name, got == wanted, got)


def start(idle_seconds):
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "2",
                             "--idle-seconds", str(idle_seconds)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    check(f"server (--idle-seconds {idle_seconds}) starts and prints its port", m, line)
    return proc, (int(m.group(1)) if m else None)


def stop(proc):
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    check("server exits cleanly on SIGTERM", proc.returncode == 0, proc.returncode)


def chat(port):
    alice = Client(port)
    expect("alice is welcomed, alone", alice, f"* welcome {alice.name}, 0 other(s) here")
    bob = Client(port)
    expect("bob is welcomed, with one other", bob, f"* welcome {bob.name}, 1 other(s) here")
    expect("alice hears that bob joined", alice, f"* {bob.name} joined")
    carol = Client(port)
    expect("carol is welcomed, with two others", carol, f"* welcome {carol.name}, 2 other(s) here")
    expect("alice hears that carol joined", alice, f"* {carol.name} joined")
    expect("bob hears that carol joined", bob, f"* {carol.name} joined")

    alice.say("hello all")
    expect("bob gets alice's line", bob, f"[{alice.name}] hello all")
    expect("carol gets alice's line", carol, f"[{alice.name}] hello all")
    bob.say("hi alice\r")  # a CRLF line end
    # Had alice's own line come back to her, it would come before bob's.
    expect("alice gets bob's line, not her own", alice, f"[{bob.name}] hi alice")
    expect("carol gets bob's line", carol, f"[{bob.name}] hi alice")
    carol.say("x" * 2000)  # over the server's 1024-byte line limit
    expect("carol's too long line is refused", carol, "* line too long, dropped")
    carol.say("short")
    expect("alice gets carol's next line only", alice, f"[{carol.name}] short")

    bob.close()
    expect("alice hears that bob left", alice, f"* {bob.name} left")
    expect("carol hears that bob left", carol, f"* {bob.name} left")
    alice.close()
    expect("carol hears that alice left", carol, f"* {alice.name} left")
    carol.close()


def idle(port):
    started = time.monotonic()  # before the connection exists, so before the server's timer
    dave = Client(port)
    expect("dave is welcomed", dave, f"* welcome {dave.name}, 0 other(s) here")
    goodbye = dave.line()
    elapsed = time.monotonic() - started
    check("silent dave gets the goodbye line", goodbye == "* goodbye: nothing from you for 1 s",
          goodbye)
    check("not before the idle time", elapsed >= 1.0, elapsed)
    check("then the server closes dave's connection", dave.line() is None)
    dave.close()


def main():
    for idle_seconds, scenario in ((60, chat), (1, idle)):
        proc, port = start(idle_seconds)
        try:
            if port is not None:
                scenario(port)
        except (OSError, ValueError) as e:
            check(f"{scenario.__name__} runs to the end", False, repr(e))
        finally:
            stop(proc)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
