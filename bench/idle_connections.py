"""Opens N keep-alive connections to a proxy, sends one request on each, reads the
answer, and keeps them all open until it reads a line on standard input; prints
"OPEN <n>" once they are open (n is how many got an answer).

    idle_connections.py HOST PORT PATH N
"""
import asyncio
import sys

HOST, PORT, PATH, COUNT = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
REQUEST = f"GET {PATH} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()


async def one(connections):
    try:
        reader, writer = await asyncio.open_connection(HOST, PORT)
        writer.write(REQUEST)
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        await reader.readexactly(length)
        connections.append(writer)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        pass


async def main():
    connections = []
    batch = 500
    for start in range(0, COUNT, batch):
        await asyncio.gather(*(one(connections) for _ in range(min(batch, COUNT - start))))
    print(f"OPEN {len(connections)}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    for writer in connections:
        writer.close()


asyncio.run(main())
