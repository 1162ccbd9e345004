#!/usr/bin/env python3
"""HTTPS test of the HTTP echo example server (--tls-cert/--tls-key). Makes a CA, a server
certificate for localhost/127.0.0.1 and an expired one with the openssl command in a temporary
directory, starts the server on an ephemeral loopback port (stopped by its PID at the end), and
checks curl (keep-alive GET, POST echo, a wrong hostname and an expired certificate refused),
openssl s_client (TLS 1.2, TLS 1.3, ALPN http/1.1) and a client that sends garbage instead of a
ClientHello, and OCSP stapling (--tls-ocsp, with a response made by `openssl ocsp`) seen by
openssl s_client -status and curl --cert-status; then a server whose certificate expires
tomorrow gets a new one by SIGHUP while a connection is open (the open connection goes on, new
ones get the new certificate, a broken file keeps the old one). With the http_client example as
a second argument, checks it too (--cacert,
--insecure, refusals). Prints 'N passed, M failed' and exits non-zero on any failure."""
import os
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

SERVER = sys.argv[1]
CLIENT = sys.argv[2] if len(sys.argv) > 2 else None
HOST = "127.0.0.1"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail!r})"))


def run(*args, input=None, timeout=20):
    return subprocess.run(list(args), input=input, capture_output=True, timeout=timeout)


def make_pki(d):
    """A CA, a server certificate it signed (localhost, 127.0.0.1) and an expired one; the server
    certificate's chain (it, then the CA) and an OCSP response saying it is good."""
    def p(name):
        return os.path.join(d, name)

    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2",
        "-subj", "/CN=trellis https test CA")
    with open(p("san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    for stem in ("server", "expired", "expiring"):
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", p(stem + ".key"), "-out", p(stem + ".csr"), "-subj", "/CN=localhost")
    run("openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey",
        p("ca.key"), "-CAcreateserial", "-out", p("server.pem"), "-days", "2",
        "-extfile", p("san.ext"))
    run("openssl", "x509", "-req", "-in", p("expiring.csr"), "-CA", p("ca.pem"), "-CAkey",
        p("ca.key"), "-CAcreateserial", "-out", p("expiring.pem"), "-days", "1",
        "-extfile", p("san.ext"))
    # An expired certificate: valid for one day, ending yesterday (openssl x509 cannot backdate,
    # so `openssl ca` with explicit dates does it).
    with open(p("ca.cnf"), "w") as f:
        f.write(f"""[ca]
default_ca = test
[test]
database = {p('index.txt')}
new_certs_dir = {d}
serial = {p('serial')}
default_md = sha256
policy = any
copy_extensions = none
unique_subject = no
[any]
commonName = supplied
[ext]
subjectAltName = DNS:localhost,IP:127.0.0.1
basicConstraints = CA:FALSE
""")
    open(p("index.txt"), "w").close()
    with open(p("serial"), "w") as f:
        f.write("1000\n")
    r = run("openssl", "ca", "-batch", "-config", p("ca.cnf"), "-cert", p("ca.pem"), "-keyfile",
            p("ca.key"), "-in", p("expired.csr"), "-out", p("expired.pem"), "-extensions", "ext",
            "-startdate", "20200101000000Z", "-enddate", "20200102000000Z", "-notext")
    if r.returncode != 0:
        raise SystemExit("openssl ca failed: " + r.stderr.decode())
    with open(p("chain.pem"), "w") as out:
        for name in ("server.pem", "ca.pem"):
            with open(p(name)) as f:
                out.write(f.read())
    # The CA answers for the server certificate from an index of the certificates it issued.
    serial = run("openssl", "x509", "-in", p("server.pem"), "-noout", "-serial").stdout
    serial = serial.decode().strip().split("=")[1]
    with open(p("ocsp-index.txt"), "w") as f:
        f.write(f"V\t301231000000Z\t\t{serial}\tunknown\t/CN=localhost\n")
    r = run("openssl", "ocsp", "-index", p("ocsp-index.txt"), "-rsigner", p("ca.pem"), "-rkey",
            p("ca.key"), "-CA", p("ca.pem"), "-issuer", p("ca.pem"), "-cert", p("server.pem"),
            "-ndays", "1", "-respout", p("server.ocsp"))
    if r.returncode != 0:
        raise SystemExit("openssl ocsp failed: " + r.stderr.decode())
    return p


def start_server(cert, key, *extra):
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "2",
                             "--tls-cert", cert, "--tls-key", key, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [\d.]+:(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, int(m.group(1))


def stop(proc):
    proc.send_signal(15)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def s_client(port, *args):
    return run("openssl", "s_client", "-connect", f"{HOST}:{port}", "-servername", "localhost",
               *args, input=b"", timeout=15)


def wait_line(proc, pattern, timeout=10):
    """The next line of the server's output matching pattern (None after timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        if re.search(pattern, line):
            return line
    return None


def get_over(conn):
    """One keep-alive GET /plaintext on an open TLS socket; the body, or None."""
    conn.sendall(b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\n\r\n")
    data = b""
    while b"Hello, World!" not in data and len(data) < 4096:
        c = conn.recv(4096)
        if not c:
            return None
        data += c
    return data


def check_reload(p, curl):
    """SIGHUP swaps the certificate of a running server (one that expires tomorrow, replaced by
    its renewal) without dropping the connection open meanwhile."""
    shutil.copy(p("expiring.pem"), p("live.pem"))
    shutil.copy(p("expiring.key"), p("live.key"))
    proc, port = start_server(p("live.pem"), p("live.key"))
    try:
        ctx = ssl.create_default_context(cafile=p("ca.pem"))
        with socket.create_connection((HOST, port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as conn:
            before = conn.getpeercert(binary_form=True)
            check("reload: a connection opened under the expiring certificate",
                  get_over(conn) is not None)
            # The renewal lands, first broken: the server keeps its certificate.
            with open(p("live.key"), "w") as f:
                f.write("not a key\n")
            proc.send_signal(signal.SIGHUP)
            check("reload: a broken key file is refused, the old certificate kept",
                  wait_line(proc, r"reload failed") is not None)
            r = run(*curl, "--resolve", f"localhost:{port}:{HOST}",
                    f"https://localhost:{port}/plaintext")
            check("reload: still serving after the failed reload",
                  r.returncode == 0 and r.stdout == b"Hello, World!", (r.returncode, r.stdout))
            shutil.copy(p("server.pem"), p("live.pem"))
            shutil.copy(p("server.key"), p("live.key"))
            proc.send_signal(signal.SIGHUP)
            check("reload: SIGHUP loads the renewed certificate",
                  wait_line(proc, r"reloaded the certificate") is not None)
            with socket.create_connection((HOST, port), timeout=10) as raw2, \
                    ctx.wrap_socket(raw2, server_hostname="localhost") as conn2:
                after = conn2.getpeercert(binary_form=True)
                check("reload: new connections get the new certificate",
                      after != before and get_over(conn2) is not None)
            with open(p("server.pem")) as f:
                renewed = ssl.PEM_cert_to_DER_cert(f.read())
            check("reload: the new certificate is the renewed one", after == renewed)
            check("reload: the connection opened before goes on", get_over(conn) is not None)
            check("reload: it still has the old certificate",
                  conn.getpeercert(binary_form=True) == before)
    finally:
        stop(proc)


def check_client(p, port):
    """The http_client example over https against the server."""
    url = f"https://127.0.0.1:{port}"  # the certificate names 127.0.0.1 too
    for mode in ([], ["--futures"]):
        r = run(CLIENT, url + "/plaintext", "--cacert", p("ca.pem"), *mode)
        check(f"http_client {' '.join(mode)} GET https /plaintext",
              r.returncode == 0 and r.stdout.endswith(b"Hello, World!")
              and r.stdout.startswith(b"HTTP/1.1 200"), (r.returncode, r.stdout, r.stderr))
    r = run(CLIENT, url + "/echo", "-d", "secret body", "--cacert", p("ca.pem"))
    check("http_client POST over https echoed",
          r.returncode == 0 and r.stdout.endswith(b"secret body"), (r.stdout, r.stderr))
    r = run(CLIENT, url + "/plaintext")
    check("http_client refuses an unknown CA",
          r.returncode == 1 and b"certificate verify failed" in r.stderr, r.stderr)
    r = run(CLIENT, url + "/plaintext", "--insecure")
    check("http_client --insecure skips the verification",
          r.returncode == 0 and r.stdout.endswith(b"Hello, World!"), (r.stdout, r.stderr))


def main():
    with tempfile.TemporaryDirectory() as d:
        p = make_pki(d)
        proc, port = start_server(p("server.pem"), p("server.key"))
        expired_proc = None
        ocsp_proc = None
        try:
            base = f"https://localhost:{port}"
            resolve = f"localhost:{port}:{HOST}"
            curl = ["curl", "-s", "--max-time", "10", "--cacert", p("ca.pem"),
                    "--resolve", resolve]

            # Two requests on one connection (keep-alive), then a POST echo.
            r = run(*curl, "-v", f"{base}/plaintext", f"{base}/plaintext")
            check("curl GET /plaintext over TLS twice",
                  r.returncode == 0 and r.stdout == b"Hello, World!" * 2, r.stdout)
            check("curl kept the connection alive", b"Re-using existing connection" in r.stderr,
                  r.stderr[-400:])
            check("curl negotiated ALPN http/1.1", b"ALPN: server accepted http/1.1" in r.stderr
                  or b"ALPN, server accepted to use http/1.1" in r.stderr, r.stderr[-400:])
            body = bytes(range(256)) * 400  # 100 KiB: several TLS records each way
            r = run(*curl, "--data-binary", "@-", "-H", "Content-Type: application/octet-stream",
                    f"{base}/echo", input=body)
            check("curl POST echoes a 100 KiB body", r.returncode == 0 and r.stdout == body,
                  (r.returncode, len(r.stdout)))

            # The certificate names localhost and 127.0.0.1, not this name.
            r = run(*curl, "--resolve", f"wrong.example:{port}:{HOST}",
                    f"https://wrong.example:{port}/plaintext")
            check("curl refuses a wrong hostname", r.returncode == 60, r.returncode)
            r = run("curl", "-s", "--max-time", "10", f"https://{HOST}:{port}/plaintext")
            check("curl refuses a certificate from an unknown CA", r.returncode == 60,
                  r.returncode)

            for version, name in (("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")):
                r = s_client(port, version, "-CAfile", p("ca.pem"), "-verify_return_error",
                             "-alpn", "http/1.1")
                out = r.stdout.decode(errors="replace")
                negotiated = f"Protocol  : {name}" in out or f"New, {name}," in out
                check(f"openssl s_client {version}",
                      negotiated and "Verify return code: 0 (ok)" in out, out[-600:])
                check(f"openssl s_client {version} ALPN http/1.1",
                      "ALPN protocol: http/1.1" in out, out[-300:])

            # Garbage instead of a ClientHello: the server closes, and keeps serving.
            with socket.create_connection((HOST, port), timeout=5) as s:
                s.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
                data, deadline = b"", time.monotonic() + 5
                closed = False
                while time.monotonic() < deadline:
                    try:
                        c = s.recv(4096)
                    except (socket.timeout, ConnectionResetError):
                        closed = True
                        break
                    if not c:
                        closed = True
                        break
                    data += c
                check("garbage instead of a ClientHello is closed", closed, data[:80])
                check("no HTTP answer in the clear", b"HTTP/1.1" not in data, data[:80])
            r = run(*curl, f"{base}/plaintext")
            check("the server still serves after the garbage",
                  r.returncode == 0 and r.stdout == b"Hello, World!", (r.returncode, r.stdout))
            check("the server is still running", proc.poll() is None, proc.poll())

            if CLIENT:
                check_client(p, port)
            check_reload(p, curl)

            # An expired certificate is refused by curl.
            expired_proc, expired_port = start_server(p("expired.pem"), p("expired.key"))
            r = run(*curl, "--resolve", f"localhost:{expired_port}:{HOST}", "-v",
                    f"https://localhost:{expired_port}/plaintext")
            check("curl refuses an expired certificate",
                  r.returncode == 60 and b"expired" in r.stderr, (r.returncode, r.stderr[-300:]))
            if CLIENT:
                r = run(CLIENT, f"https://127.0.0.1:{expired_port}/plaintext", "--cacert",
                        p("ca.pem"))
                check("http_client refuses an expired certificate",
                      r.returncode == 1 and b"expired" in r.stderr, r.stderr)

            # OCSP stapling: for clients that ask, from a server given a response.
            r = s_client(port, "-CAfile", p("ca.pem"), "-status")
            out = r.stdout.decode(errors="replace")
            check("openssl s_client -status: a server without --tls-ocsp staples nothing",
                  "OCSP response: no response sent" in out, out[-600:])
            r = run(*curl, "--cert-status", f"{base}/plaintext")
            check("curl --cert-status refuses a server that staples nothing", r.returncode == 91,
                  r.returncode)
            ocsp_proc, ocsp_port = start_server(p("chain.pem"), p("server.key"), "--tls-ocsp",
                                                p("server.ocsp"))
            for version in ("-tls1_2", "-tls1_3"):
                r = s_client(ocsp_port, version, "-CAfile", p("ca.pem"), "-verify_return_error",
                             "-status")
                out = r.stdout.decode(errors="replace")
                check(f"openssl s_client {version} -status gets the stapled response",
                      "OCSP Response Status: successful" in out and "Cert Status: good" in out
                      and "Verify return code: 0 (ok)" in out, out[-900:])
            r = run(*curl, "--resolve", f"localhost:{ocsp_port}:{HOST}", "--cert-status",
                    f"https://localhost:{ocsp_port}/plaintext")
            check("curl --cert-status accepts the stapled response",
                  r.returncode == 0 and r.stdout == b"Hello, World!", (r.returncode, r.stderr))
            r = run(SERVER, "--host", HOST, "--port", "0", "--tls-cert", p("server.pem"),
                    "--tls-key", p("server.key"), "--tls-ocsp", p("server.ocsp"))
            check("--tls-ocsp with a chain lacking the issuer is refused at start",
                  r.returncode == 1 and b"not in the certificate chain" in r.stderr, r.stderr)
        finally:
            stop(proc)
            if expired_proc is not None:
                stop(expired_proc)
            if ocsp_proc is not None:
                stop(ocsp_proc)
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
