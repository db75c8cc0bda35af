"""Where the slowest requests of a run spent their time, from a system-call trace.

Reads `perf script` output (comm, pid/tid, cpu, time, event, trace fields) of the system
calls of the load generator, a proxy and its upstream, and the descriptor map written by
bench/tail.sh (`PID FD LOCAL_PORT REMOTE_PORT ROLE` per socket), and follows every request:

- on a client connection: the load generator's write, the proxy's first read of it, the
  proxy's first write back, the load generator's first read of the answer;
- on an upstream connection: the proxy's write of a request, the upstream's first read of
  it, the upstream's first write back, the proxy's first read of the answer.

Prints each leg's percentiles, and how the slowest 1 % split their time. When the client
requests came over one connection (one at a time), each is matched with the upstream exchange
made while the proxy held it, which splits the proxy's own time into the way out (client
request read to upstream request written) and the way back (upstream answer read to client
answer written).

    python3 bench/tail.py DESCRIPTORS < perf-script-output
    python3 bench/tail.py map PROXY_PORT UPSTREAM_PORT WRK_PID "PROXY_PIDS" "UPSTREAM_PIDS" > DESCRIPTORS
"""

import os

import re
import statistics
import sys

EVENT = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+\[\d+\]\s+([\d.]+):\s+syscalls:(sys_(?:enter|exit)_\w+):\s*(.*)$")
READS = {"read", "recvfrom"}
WRITES = {"write", "sendto", "writev", "sendmsg"}
MSG_PEEK = 2


def write_map(proxy_port, upstream_port, wrk, proxies, upstreams):
    """Prints the socket descriptors of the processes with their ports and roles."""
    ports = {}
    for line in open("/proc/net/tcp").readlines()[1:]:
        fields = line.split()
        local, remote = (int(f.split(":")[1], 16) for f in fields[1:3])
        ports[fields[9]] = (local, remote)
    for pid, group in [(p, "wrk") for p in wrk.split()] + [(p, "proxy") for p in proxies.split()] + [
        (p, "upstream") for p in upstreams.split()
    ]:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            inode = target[len("socket:[") : -1] if target.startswith("socket:[") else None
            if inode not in ports:
                continue
            local, remote = ports[inode]
            role = None
            if group == "wrk" and remote == proxy_port:
                role = "wrk"
            elif group == "proxy" and local == proxy_port and remote != 0:
                role = "proxy-client"
            elif group == "proxy" and remote == upstream_port:
                role = "proxy-upstream"
            elif group == "upstream" and local == upstream_port and remote != 0:
                role = "upstream"
            if role:
                print(pid, fd, local, remote, role)


def load_descriptors(path):
    """(pid, fd) -> (connection key, role): a client connection is keyed by the load
    generator's port, an upstream one by the proxy's."""
    sockets = {}
    for line in open(path):
        pid, fd, local, remote, role = line.split()
        local, remote = int(local), int(remote)
        if role == "wrk":
            sockets[(pid, int(fd))] = (("client", local), role)
        elif role == "proxy-client":
            sockets[(pid, int(fd))] = (("client", remote), "proxy")
        elif role == "proxy-upstream":
            sockets[(pid, int(fd))] = (("upstream", local), "proxy")
        elif role == "upstream":
            sockets[(pid, int(fd))] = (("upstream", remote), role)
    return sockets


def follow(lines, sockets):
    """The timestamps of each request on each leg: lists of (start, 2nd, 3rd, end)."""
    pending = {}  # tid -> (key, role, call, flags, entered)
    state = {}  # connection key -> timestamps so far
    done = {"client": [], "upstream": []}
    # Who writes first and who answers, per kind of connection.
    sender = {"client": "wrk", "upstream": "proxy"}
    for line in lines:
        match = EVENT.match(line)
        if not match:
            continue
        _, pid, tid, time, event, fields = match.groups()
        time = float(time)
        call = event.split("_", 2)[2]
        if event.startswith("sys_enter_"):
            if call not in READS and call not in WRITES:
                continue
            fd = re.search(r"fd: (0x[0-9a-f]+)", fields)
            if not fd:
                continue
            found = sockets.get((pid, int(fd.group(1), 16)))
            if not found:
                continue
            (kind, port), role = found
            flags = re.search(r"flags: (0x[0-9a-f]+)", fields)
            flags = int(flags.group(1), 16) if flags else 0
            if call in WRITES:
                steps = state.get((kind, port))
                if role == sender[kind]:
                    # A new request, unless this write continues one still under way (a
                    # request in several writes); a trace that lost an event starts over.
                    if steps is None or len(steps) == 4 or time - steps[0] > 1:
                        state[(kind, port)] = [time]
                elif steps is not None and len(steps) == 2:
                    steps.append(time)
            else:
                pending[tid] = ((kind, port), role, flags, time)
            continue
        if call not in READS or tid not in pending:
            continue
        (kind, port), role, flags, entered = pending.pop(tid)
        result = int(fields.split()[0], 16)
        if flags & MSG_PEEK or result == 0 or result >= 1 << 63:
            continue
        steps = state.get((kind, port))
        if steps is None:
            continue
        if role != sender[kind] and len(steps) == 1:
            steps.append(entered)
        elif role == sender[kind] and len(steps) == 3:
            steps.append(time)
            done[kind].append((*steps, port))
    return done


def percentiles(values):
    ordered = sorted(values)

    def at(share):
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000

    return f"p50 {at(0.5):7.2f}  p90 {at(0.9):7.2f}  p99 {at(0.99):7.2f}  max {ordered[-1] * 1000:7.2f}"


def report(kind, requests, legs):
    if not requests:
        print(f"{kind}: no complete request traced")
        return
    print(f"{kind} connections: {len(requests)} requests traced, ms")
    for name, first, last in legs:
        print(f"  {name:34s} {percentiles([r[last] - r[first] for r in requests])}")
    ordered = sorted(requests, key=lambda r: r[3] - r[0])
    slowest = ordered[int(0.99 * len(ordered)):]
    split = ", ".join(
        f"{name} {statistics.mean(r[last] - r[first] for r in slowest) * 1000:.2f}" for name, first, last in legs[1:]
    )
    print(f"  slowest 1 % ({len(slowest)}), mean ms: {split}")


def split_one_connection(clients, upstreams):
    """For requests made one at a time: each client request with the upstream exchange that
    started while the proxy held it, as (proxy read, upstream write, upstream answer read,
    proxy answer)."""
    if not clients or len({r[4] for r in clients}) != 1:
        return []
    starts = sorted(upstreams)
    matched = []
    index = 0
    for request in sorted(clients):
        while index < len(starts) and starts[index][0] < request[1]:
            index += 1
        if index < len(starts) and starts[index][3] <= request[2]:
            exchange = starts[index]
            matched.append((request[1], exchange[0], exchange[3], request[2], 0))
    return matched


def main():
    if sys.argv[1] == "map":
        write_map(int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7])
        return
    sockets = load_descriptors(sys.argv[1])
    done = follow(sys.stdin, sockets)
    report(
        "client",
        done["client"],
        [
            ("whole request", 0, 3),
            ("client write to proxy read", 0, 1),
            ("proxy read to proxy answer", 1, 2),
            ("proxy answer to client read", 2, 3),
        ],
    )
    report(
        "upstream",
        done["upstream"],
        [
            ("whole exchange", 0, 3),
            ("proxy write to upstream read", 0, 1),
            ("upstream read to upstream answer", 1, 2),
            ("upstream answer to proxy read", 2, 3),
        ],
    )
    matched = split_one_connection(done["client"], done["upstream"])
    if matched:
        print(f"one client connection: {len(matched)} requests matched with their upstream exchange, ms")
        for name, first, last in [
            ("proxy read to upstream write", 0, 1),
            ("upstream write to upstream answer read", 1, 2),
            ("upstream answer read to proxy answer", 2, 3),
        ]:
            print(f"  {name:38s} {percentiles([r[last] - r[first] for r in matched])}")


if __name__ == "__main__":
    main()
