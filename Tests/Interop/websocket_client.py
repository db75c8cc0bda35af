"""A WebSocket client (the `websockets` package from PyPI) for the tunnel tests: runs one
scenario against a URL and prints one JSON line with what it saw.

Usage: websocket_client.py SCENARIO URL [--origin ORIGIN] [--count N] [--bytes N]
Scenarios: echo, server-close, client-close, concurrent, slow-reader, slow-server, headers.
"""

import argparse
import asyncio
import hashlib
import json
import os
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("url")
    parser.add_argument("--origin")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--bytes", type=int, default=8 * 1024 * 1024)
    arguments = parser.parse_args()
    try:
        result = asyncio.run(asyncio.wait_for(SCENARIOS[arguments.scenario](arguments), 120))
    except InvalidStatus as refused:
        result = {"status": refused.response.status_code, "body": refused.response.body.decode(errors="replace")}
    print(json.dumps(result), flush=True)


def opened(arguments, path=""):
    return connect(arguments.url + path, origin=arguments.origin, max_size=None, compression=None, open_timeout=30)


async def echo(arguments):
    async with opened(arguments, "/echo") as websocket:
        await websocket.send("héllo, tunnel")
        text = await websocket.recv()
        payload = os.urandom(1024 * 1024)
        await websocket.send(payload)
        binary = await websocket.recv()
        latency = await (await websocket.ping(b"are you there"))
        await websocket.close(1000)
        return {
            "text": text == "héllo, tunnel",
            "binary": binary == payload,
            "pong": latency >= 0,
            "close_code": websocket.close_code,
        }


async def server_close(arguments):
    async with opened(arguments, "/close/4001") as websocket:
        try:
            await websocket.recv()
        except ConnectionClosed as closed:
            return {"close_code": closed.rcvd.code if closed.rcvd else None, "reason": closed.rcvd.reason if closed.rcvd else None}
    return {"close_code": None}


async def client_close(arguments):
    async with opened(arguments, "/echo") as websocket:
        await websocket.close(4002, "closed by the client")
        return {"close_code": websocket.close_code}


async def concurrent(arguments):
    async def one(index, gate, ready):
        async with opened(arguments, "/echo") as websocket:
            ready.append(index)
            await gate.wait()
            await websocket.send(f"message {index}")
            return await websocket.recv() == f"message {index}"

    gate = asyncio.Event()
    ready = []
    tasks = [asyncio.create_task(one(index, gate, ready)) for index in range(arguments.count)]
    while len(ready) < arguments.count and not any(task.done() for task in tasks):
        await asyncio.sleep(0.05)
    opened_together = len(ready)
    gate.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    return {"opened_together": opened_together, "echoed": sum(1 for result in results if result is True)}


async def slow_reader(arguments):
    async with opened(arguments, f"/flood/{arguments.bytes}") as websocket:
        digest = hashlib.sha256()
        count = 0
        while True:
            message = await websocket.recv()
            if isinstance(message, str):
                break
            digest.update(message)
            count += len(message)
            await asyncio.sleep(0.002)
        return {"bytes": count, "intact": message == digest.hexdigest()}


async def slow_server(arguments):
    async with opened(arguments, "/sink") as websocket:
        digest = hashlib.sha256()
        remaining = arguments.bytes
        while remaining > 0:
            part = os.urandom(min(remaining, 65536))
            digest.update(part)
            remaining -= len(part)
            await websocket.send(part)
        await websocket.send("done")
        count, received = (await websocket.recv()).split()
        return {"bytes": int(count), "intact": received == digest.hexdigest()}


async def headers(arguments):
    async with opened(arguments, "/headers") as websocket:
        return json.loads(await websocket.recv())


SCENARIOS = {
    "echo": echo,
    "server-close": server_close,
    "client-close": client_close,
    "concurrent": concurrent,
    "slow-reader": slow_reader,
    "slow-server": slow_server,
    "headers": headers,
}

if __name__ == "__main__":
    sys.exit(main())
