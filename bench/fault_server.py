"""A token endpoint and an upstream that misbehave on request, for bench/soak.sh.

    fault_server.py PORT [--expires-in SECONDS]

Listens on 127.0.0.1:PORT only, one thread per connection, and answers by path:

    /token          the token endpoint in the mode set by /_control?token=MODE ("answer"
                    at start), so the soak can flip it between healthy and faulty
    /token/MODE     the token endpoint in a fixed mode
    /up/MODE[/...]  an upstream in a fixed mode
    /_control       JSON counters; ?token=MODE sets the mode of /token first

Modes (the same for both roles, with a body fitting the role):

    answer    200: a client_credentials token living --expires-in seconds (default 5),
              or a short text body; the connection is kept open for the next request
    big       upstream only: 200 with a 1 MiB body (for clients that read a head and leave)
    refuse    token: 401 invalid_client; upstream: 503 with a JSON body
    busy      503 with Retry-After: 1 (a token endpoint the proxy may retry)
    html      200 with an HTML page instead of JSON
    hang      reads the request, never answers (until the peer leaves, at most 120 s)
    silence   sends a head announcing a body, then nothing
    drip      a byte every 0.125 s (upstream: 16 bytes, done in 2 s) or every 0.25 s
              (token: the whole JSON, longer than any sane token request deadline)
    reset     a head announcing 4 KiB, 512 bytes of it, then a TCP reset
    garbage   bytes that are not HTTP, then close
    close     closes the connection without answering
    flap      per request in turn: answer, close, answer, reset, answer, hang

Standard library only; nothing here reads a file or reaches past loopback.
"""

import argparse
import json
import select
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse

MODES = ("answer", "big", "refuse", "busy", "html", "hang", "silence", "drip", "reset", "garbage", "close", "flap")
FLAP = ("answer", "close", "answer", "reset", "answer", "hang")
HANG_LIMIT = 120.0
IDLE_LIMIT = 30.0
MAX_HEAD = 65536


class State:
    """What every connection thread shares: the /token mode and the counters."""

    def __init__(self, expires_in):
        self.lock = threading.Lock()
        self.expires_in = expires_in
        self.token_mode = "answer"
        self.served = {}
        self.open_connections = 0
        self.connections = 0
        self.flap = {"token": 0, "up": 0}
        self.issued = 0

    def count(self, role, mode):
        with self.lock:
            key = f"{role}/{mode}"
            self.served[key] = self.served.get(key, 0) + 1

    def next_flap(self, role):
        with self.lock:
            self.flap[role] += 1
            return FLAP[self.flap[role] % len(FLAP)]

    def snapshot(self):
        with self.lock:
            return {
                "token_mode": self.token_mode,
                "open_connections": self.open_connections,
                "connections": self.connections,
                "tokens_issued": self.issued,
                "served": dict(sorted(self.served.items())),
            }


class Closed(Exception):
    """The peer left, or sent something this server does not read."""


def read_request(sock, buffer):
    """Reads one request (head and Content-Length or chunked body); returns
    (method, target, headers, rest of the buffer)."""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEAD:
            raise Closed()
        data = sock.recv(65536)
        if not data:
            raise Closed()
        buffer += data
    head, _, buffer = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise Closed()
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        buffer = read_chunked(sock, buffer)
    else:
        length = int(headers.get("content-length", "0") or "0")
        while len(buffer) < length:
            data = sock.recv(65536)
            if not data:
                raise Closed()
            buffer += data
        buffer = buffer[length:]
    return parts[0], parts[1], headers, buffer


def read_chunked(sock, buffer):
    """Skips a chunked body; returns what follows it."""

    def fill(predicate):
        nonlocal buffer
        while not predicate():
            data = sock.recv(65536)
            if not data:
                raise Closed()
            buffer += data

    while True:
        fill(lambda: b"\r\n" in buffer)
        line, _, buffer = buffer.partition(b"\r\n")
        size = int(line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            fill(lambda: b"\r\n\r\n" in b"\r\n" + buffer)
            _, _, buffer = (b"\r\n" + buffer).partition(b"\r\n\r\n")
            return buffer
        fill(lambda: len(buffer) >= size + 2)
        buffer = buffer[size + 2 :]


def wait_for_peer(sock, limit=HANG_LIMIT):
    """Sends nothing until the peer closes its side (or `limit` passes)."""
    deadline = time.monotonic() + limit
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        readable, _, _ = select.select([sock], [], [], left)
        if readable and not sock.recv(65536):
            return


def reset(sock):
    """Closes with a TCP reset instead of a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def head(status, content_type, length, extra=""):
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n{extra}\r\n"
    ).encode()


class Handler(socketserver.BaseRequestHandler):
    """One client connection: its requests in turn, each answered in the mode its path names."""

    def handle(self):
        state = self.server.state
        with state.lock:
            state.open_connections += 1
            state.connections += 1
        try:
            self.serve(state)
        except (Closed, OSError, ValueError):
            pass
        finally:
            with state.lock:
                state.open_connections -= 1

    def serve(self, state):
        sock = self.request
        sock.settimeout(IDLE_LIMIT)
        buffer = b""
        while True:
            _, target, headers, buffer = read_request(sock, buffer)
            url = urllib.parse.urlsplit(target)
            segments = url.path.strip("/").split("/")
            if segments[0] == "_control":
                query = urllib.parse.parse_qs(url.query)
                mode = query.get("token", [None])[0]
                if mode in MODES:
                    with state.lock:
                        state.token_mode = mode
                body = json.dumps(state.snapshot()).encode()
                sock.sendall(head("200 OK", "application/json", len(body)) + body)
                continue
            if segments[0] == "token":
                role = "token"
                mode = segments[1] if len(segments) > 1 else state.token_mode
            elif segments[0] == "up" and len(segments) > 1:
                role, mode = "up", segments[1]
            else:
                sock.sendall(head("404 Not Found", "text/plain", 0))
                continue
            if mode not in MODES:
                sock.sendall(head("404 Not Found", "text/plain", 0))
                continue
            if mode == "flap":
                mode = state.next_flap(role)
            state.count(role, mode)
            if not self.answer(sock, state, role, mode, headers):
                return

    def answer(self, sock, state, role, mode, headers):
        """Answers one request; returns whether the connection stays open."""
        if mode == "answer" and role == "token":
            with state.lock:
                state.issued += 1
                number = state.issued
            token = {"access_token": f"soak-{number}", "token_type": "Bearer", "expires_in": state.expires_in}
            body = json.dumps(token).encode()
            sock.sendall(head("200 OK", "application/json", len(body)) + body)
            return True
        if mode == "answer":
            authorized = "yes" if headers.get("authorization", "").startswith("Bearer soak-") else "no"
            body = b"ok\n"
            sock.sendall(head("200 OK", "text/plain", len(body), f"X-Soak-Authorized: {authorized}\r\n") + body)
            return True
        if mode == "big":
            size, piece = 1 << 20, b"b" * 16384
            sock.sendall(head("200 OK", "application/octet-stream", size))
            for _ in range(size // len(piece)):
                sock.sendall(piece)
            return True
        if mode == "refuse":
            if role == "token":
                body = b'{"error":"invalid_client","error_description":"soak refuses"}'
                sock.sendall(head("401 Unauthorized", "application/json", len(body)) + body)
            else:
                body = b'{"error":"soak refuses"}'
                sock.sendall(head("503 Service Unavailable", "application/json", len(body)) + body)
            return True
        if mode == "busy":
            body = b'{"error":"temporarily_unavailable"}'
            sock.sendall(head("503 Service Unavailable", "application/json", len(body), "Retry-After: 1\r\n") + body)
            return True
        if mode == "html":
            body = b"<html><body>Sign in</body></html>"
            sock.sendall(head("200 OK", "text/html", len(body)) + body)
            return True
        if mode == "hang":
            wait_for_peer(sock)
            return False
        if mode == "silence":
            sock.sendall(head("200 OK", "application/json", 200))
            wait_for_peer(sock)
            return False
        if mode == "drip":
            if role == "token":
                body, interval = json.dumps({"access_token": "drip", "token_type": "Bearer"}).encode(), 0.25
            else:
                body, interval = b"0123456789abcdef", 0.125
            sock.sendall(head("200 OK", "application/json", len(body)))
            for index in range(len(body)):
                time.sleep(interval)
                sock.sendall(body[index : index + 1])
            return True
        if mode == "reset":
            sock.sendall(head("200 OK", "application/octet-stream", 4096) + b"r" * 512)
            time.sleep(0.05)
            reset(sock)
            return False
        if mode == "garbage":
            sock.sendall(b"\x16\x03\x01\x00garbage\x00\xff not http\r\n\r\n")
            return False
        return False  # close


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--expires-in", type=int, default=5)
    arguments = parser.parse_args()
    server = Server(("127.0.0.1", arguments.port), Handler)
    server.state = State(arguments.expires_in)
    print(f"listening on 127.0.0.1:{arguments.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
