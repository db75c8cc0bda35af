#!/usr/bin/env python3
"""A resource server for certificate-bound access tokens (RFC 8705 §3): HTTPS on 127.0.0.1
that asks every client for a certificate (signed by --ca), and answers 200 only to a request
whose `Authorization: Bearer` JWT carries `cnf.x5t#S256` equal to the SHA-256 of the
certificate the client presented on this connection; otherwise 401. The JWT's signature is
not checked here (the token comes from a server the test trusts); the binding is the point.

    mtls_resource.py --cert CERT --key KEY --ca CA

Prints `READY <port>` once listening. GET /stats answers {"answers": [...]} with, per request,
the status given and the presented certificate's thumbprint.
"""
import argparse
import base64
import hashlib
import http.server
import json
import ssl
import threading

answers = []
lock = threading.Lock()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(token):
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        return json.loads(base64.urlsafe_b64decode(payload))
    except ValueError:
        return {}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *arguments):
        pass

    def answer(self, status, document):
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.path == "/stats":
            with lock:
                self.answer(200, {"answers": list(answers)})
            return
        der = self.connection.getpeercert(binary_form=True)
        presented = b64url(hashlib.sha256(der).digest()) if der else None
        authorization = self.headers.get("Authorization", "")
        bound = None
        if authorization.startswith("Bearer "):
            bound = (claims(authorization[7:]).get("cnf") or {}).get("x5t#S256")
        status = 200 if presented and bound == presented else 401
        with lock:
            answers.append({"status": status, "presented": presented, "bound": bound, "path": self.path})
        self.answer(status, {"bound": bound, "presented": presented})

    do_GET = handle_any
    do_POST = handle_any


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--ca", required=True)
    arguments = parser.parse_args()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(arguments.cert, arguments.key)
    context.load_verify_locations(arguments.ca)
    # Asked for, not required at the handshake: a request without one gets a 401 it can read.
    context.verify_mode = ssl.CERT_OPTIONAL
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"READY {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
