"""Opens N keep-alive connections to a proxy, sends one request on each, reads the
answer, and keeps them all open until it reads a line on standard input; prints
"OPEN <n>" once they are open (n is how many got a 2xx answer without being told the
connection closes: a proxy that refuses connections, say with 503, does not hold them).

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
        lines = head.split(b"\r\n")
        status = lines[0].split(b" ")[1:2]
        length, kept = 0, bool(status) and status[0].startswith(b"2")
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
            elif name.strip().lower() == b"connection" and b"close" in value.lower():
                kept = False
        await reader.readexactly(length)
        if kept:
            connections.append(writer)
        else:
            writer.close()
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
