"""A WebSocket server (the `websockets` package from PyPI) that checks a bearer token, for
the tunnel tests. Prints `READY <port>` once listening.

Arguments: --accept TOKEN (repeatable): the bearer tokens it takes; --accept-dpop TOKEN
(repeatable): the DPoP-bound tokens it takes (the proof is recorded, not checked); others get 401.
--tls CERT KEY [--client-ca CA]: serve TLS (with client certificates checked against CA).

Paths: /echo echoes every message; /close/CODE closes with CODE; /flood/N sends N bytes in
64 KiB messages, then their SHA-256 as text; /sink reads slowly until the text "done", then
answers "<bytes> <sha256>"; /headers sends the handshake's headers as JSON. GET /stats
(plain HTTP, no token) answers the counts as JSON.
"""

import argparse
import asyncio
import hashlib
import http
import json
import os
import ssl
import sys

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response

stats = {"handshakes": 0, "refused": 0, "open": 0, "max_open": 0, "close_codes": [], "authorizations": [], "proofs": []}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accept", action="append", default=[])
    parser.add_argument("--accept-dpop", action="append", default=[])
    parser.add_argument("--tls", nargs=2)
    parser.add_argument("--client-ca")
    arguments = parser.parse_args()
    asyncio.run(run(arguments))


def plain(status, text):
    body = text.encode()
    headers = Headers([("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return Response(status.value, status.phrase, headers, body)


async def run(arguments):
    accepted = {f"Bearer {token}" for token in arguments.accept}
    accepted |= {f"DPoP {token}" for token in arguments.accept_dpop}

    def check(connection, request):
        if request.path == "/stats":
            return plain(http.HTTPStatus.OK, json.dumps(stats))
        stats["handshakes"] += 1
        authorization = request.headers.get("Authorization", "")
        stats["authorizations"].append(authorization)
        stats["proofs"].append(request.headers.get("DPoP", ""))
        if authorization not in accepted:
            stats["refused"] += 1
            return plain(http.HTTPStatus.UNAUTHORIZED, "invalid token\n")
        return None

    context = None
    if arguments.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*arguments.tls)
        if arguments.client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(arguments.client_ca)

    async with serve(
        handler, "127.0.0.1", 0, process_request=check, ssl=context, max_size=None, compression=None
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"READY {port}", flush=True)
        await asyncio.get_running_loop().create_future()


async def handler(websocket):
    stats["open"] += 1
    stats["max_open"] = max(stats["max_open"], stats["open"])
    path = websocket.request.path
    try:
        if path == "/echo":
            async for message in websocket:
                await websocket.send(message)
        elif path.startswith("/close/"):
            await websocket.close(int(path.rsplit("/", 1)[1]), "closed by the server")
        elif path.startswith("/flood/"):
            remaining = int(path.rsplit("/", 1)[1])
            digest = hashlib.sha256()
            while remaining > 0:
                part = os.urandom(min(remaining, 65536))
                digest.update(part)
                remaining -= len(part)
                await websocket.send(part)
            await websocket.send(digest.hexdigest())
            await websocket.wait_closed()
        elif path == "/sink":
            digest = hashlib.sha256()
            count = 0
            async for message in websocket:
                if message == "done":
                    await websocket.send(f"{count} {digest.hexdigest()}")
                    continue
                digest.update(message)
                count += len(message)
                await asyncio.sleep(0.002)
        elif path == "/headers":
            await websocket.send(json.dumps(dict(websocket.request.headers.raw_items())))
            await websocket.wait_closed()
    finally:
        stats["open"] -= 1
        if websocket.close_code is not None:
            stats["close_codes"].append(websocket.close_code)


if __name__ == "__main__":
    sys.exit(main())
