#!/usr/bin/env python3
"""TLS audit of the HTTP echo example server with testssl.sh (Debian package testssl.sh).

Makes a CA and a server certificate (ECDSA P-256, localhost/127.0.0.1) with the openssl command
in a temporary directory, starts `http_echo_server --tls-cert --tls-key` on an ephemeral
loopback port (stopped by its PID at the end) and runs `testssl -p -s -f -P -S -U` (protocols,
cipher categories, forward secrecy, server preferences, server defaults, vulnerabilities) against it, with the
findings written as JSON. Fails on any finding of severity MEDIUM or above, except those about
the test's own certificate (ids starting with cert_ or about its chain of trust, expiry and
revocation URIs: a throwaway CA is not trusted and publishes neither OCSP nor CRL), and checks
the points the audit is for by id: no SSLv2/SSLv3/TLS 1.0/TLS 1.1, no CBC or other obsolete
suites offered, the server's cipher order enforced, forward secrecy, no secure renegotiation
initiated by the client, no TLS compression. Prints each check and 'N passed, M failed'; exits
non-zero on any failure. Usage: tls_audit_test.py PATH/TO/http_echo_server"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SERVER = sys.argv[1]
HOST = "127.0.0.1"
SEVERITIES = ["OK", "INFO", "LOW", "MEDIUM", "HIGH", "CRITICAL"]
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  ({detail})"),
          flush=True)


def run(*args, timeout=60):
    return subprocess.run(list(args), capture_output=True, timeout=timeout)


def make_certificate(d):
    def p(name):
        return os.path.join(d, name)

    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2",
        "-subj", "/CN=trellis tls audit CA")
    with open(p("san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", p("server.key"), "-out", p("server.csr"), "-subj", "/CN=localhost")
    run("openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey",
        p("ca.key"), "-CAcreateserial", "-out", p("server.pem"), "-days", "2",
        "-extfile", p("san.ext"))
    # The chain the server presents: leaf, then the CA.
    with open(p("chain.pem"), "w") as out:
        for name in ("server.pem", "ca.pem"):
            with open(p(name)) as f:
                out.write(f.read())
    return p("chain.pem"), p("server.key")


def start_server(cert, key):
    proc = subprocess.Popen([SERVER, "--host", HOST, "--port", "0", "--threads", "1",
                             "--tls-cert", cert, "--tls-key", key],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()  # "http_echo_server listening on 127.0.0.1:PORT (...)"
    port = int(line.split(" (")[0].rsplit(":", 1)[1])
    for _ in range(100):
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, port


def about_test_certificate(finding_id):
    # The throwaway CA is not in any trust store and the certificate has no OCSP/CRL URIs.
    return finding_id.startswith("cert_") or finding_id in (
        "chain_of_trust", "OCSP_stapling", "DNS_CAArecord")


def main():
    testssl = shutil.which("testssl") or shutil.which("testssl.sh")
    if testssl is None:
        print("FAIL testssl is not installed (Debian package testssl.sh)")
        sys.exit(1)
    with tempfile.TemporaryDirectory() as d:
        cert, key = make_certificate(d)
        proc, port = start_server(cert, key)
        report = os.path.join(d, "testssl.json")
        try:
            r = run(testssl, "--quiet", "--color", "0", "--warnings", "off", "--fast",
                    "--ip", HOST, "--jsonfile", report, "-p", "-s", "-f", "-P", "-S", "-U",
                    f"{HOST}:{port}", timeout=600)
            check("testssl ran and wrote its findings", os.path.exists(report),
                  r.stdout.decode()[-2000:] + r.stderr.decode()[-2000:])
            check("the server is still up after the audit", proc.poll() is None)
        finally:
            proc.kill()
            proc.wait()
        if not os.path.exists(report):
            return
        with open(report) as f:
            findings = json.load(f)
    by_id = {}
    for item in findings:
        by_id.setdefault(item.get("id", ""), []).append(item)

    def finding(finding_id):
        items = by_id.get(finding_id, [])
        return items[0].get("finding", "") if items else "(not reported)"

    serious = [f"{i.get('id')} {i.get('severity')}: {i.get('finding')}" for i in findings
               if i.get("severity") in SEVERITIES[3:] and not about_test_certificate(i.get("id", ""))]
    check("no finding at MEDIUM or above (other than the test certificate's)", not serious,
          "; ".join(serious))
    for proto in ("SSLv2", "SSLv3", "TLS1", "TLS1_1"):
        check(f"{proto} not offered", "not offered" in finding(proto), finding(proto))
    check("TLS 1.2 offered", finding("TLS1_2").startswith("offered"), finding("TLS1_2"))
    check("TLS 1.3 offered", finding("TLS1_3").startswith("offered"), finding("TLS1_3"))
    for category in ("cipherlist_NULL", "cipherlist_aNULL", "cipherlist_EXPORT",
                     "cipherlist_LOW", "cipherlist_3DES_IDEA", "cipherlist_AVERAGE"):
        check(f"{category} not offered", "not offered" in finding(category), finding(category))
    check("the server's cipher order is enforced", finding("cipher_order").startswith("server"),
          finding("cipher_order"))
    check("forward secrecy offered", finding("PFS") == "offered", finding("PFS"))
    check("no LUCKY13 (no CBC suites)", "not vulnerable" in finding("LUCKY13"),
          finding("LUCKY13"))
    check("no client-initiated renegotiation",
          "not vulnerable" in finding("secure_client_renego"), finding("secure_client_renego"))
    check("no TLS compression (CRIME)", "not vulnerable" in finding("CRIME_TLS"),
          finding("CRIME_TLS"))


if __name__ == "__main__":
    main()
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed or not results else 0)
