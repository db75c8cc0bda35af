"""The load of bench/soak.sh: normal requests mixed with faults against a running tokenproxy,
the proxy's descriptors and resident memory sampled, and the figures printed at the end.

    soak_load.py --proxy PORT --faults PORT --pid PID --log FILE [options]

Phases: a warm-up of the whole mix (not counted), a rest until the proxy's descriptor count
holds still (the start figures), the soak itself, the same rest again (the end figures).
Throughout, `healthz` is probed at every sample and the /token endpoint of the fault server
is flipped between healthy and one faulty mode after another. Exits 1 when the descriptors
or the resident memory grew past the limits between the two rests, when a probe went
unanswered, when a client waited longer than any limit of the proxy allows (a client
timeout), or when the proxy exited; else 0. Standard library only; loopback only.
"""

import argparse
import collections
import http.client
import json
import os
import random
import re
import socket
import struct
import sys
import threading
import time

HOST = "127.0.0.1"
FLIPS = ("answer", "hang", "answer", "refuse", "answer", "silence", "answer", "busy", "answer", "garbage",
         "answer", "drip", "answer", "reset", "answer", "html", "answer", "close")
TOKEN_FAULTS = ("hang", "silence", "drip", "refuse", "busy", "html", "garbage", "reset", "close", "flap", "down")
UPSTREAM_FAULTS = ("hang", "silence", "drip", "refuse", "garbage", "reset", "close", "flap", "down")


class Soak:
    """Shared between the load threads, the sampler and the flipper."""

    def __init__(self, options):
        self.options = options
        self.lock = threading.Lock()
        self.results = []  # (scenario, kind, seconds) of the counted phase
        self.warmup_requests = 0
        self.counting = False
        self.sent = 0
        self.stop = threading.Event()
        self.done = threading.Event()
        self.samples = []  # (seconds since start, descriptors, rss KiB)
        self.probes = []  # (ok, seconds)
        self.flips = 0
        self.next_slot = time.monotonic()
        self.started = time.monotonic()

    def record(self, scenario, kind, seconds):
        with self.lock:
            if self.counting:
                self.results.append((scenario, kind, seconds))
            else:
                self.warmup_requests += 1

    def take_slot(self):
        """Paces the threads together to --rate request starts a second; False past the cap."""
        with self.lock:
            if self.sent >= self.options.max_requests:
                return None
            self.sent += 1
            slot = max(self.next_slot, time.monotonic())
            self.next_slot = slot + 1.0 / self.options.rate
        return slot


# The clients.


def exchange(options, path, method="GET", body=None, head_only=False):
    """One request on a new connection; returns the kind of answer."""
    connection = http.client.HTTPConnection(HOST, options.proxy, timeout=options.client_timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        kind = f"{response.status} {response.getheader('X-Tokenproxy-Error') or '-'}"
        if head_only:
            return kind + ", head read then client left"
        try:
            response.read()
        except (http.client.IncompleteRead, ConnectionError):
            return kind + ", body broken off"
        except socket.timeout:
            return "client timeout (body)"
        return kind
    except socket.timeout:
        return "client timeout"
    except http.client.RemoteDisconnected:
        return "closed before head"
    except ConnectionRefusedError:
        return "connection refused"
    except ConnectionResetError:
        return "reset before head"
    except (http.client.HTTPException, OSError) as error:
        return f"error {type(error).__name__}"
    finally:
        connection.close()


def leave_early(options, path, wait, mid_head=False):
    """Connects, sends a request (or half of its head) and leaves after `wait` seconds, half of
    the time with a reset rather than a close."""
    try:
        sock = socket.create_connection((HOST, options.proxy), timeout=options.client_timeout)
    except OSError:
        return "connection refused"
    request = f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nAccept: */*\r\n"
    sock.sendall((request[: len(request) // 2] if mid_head else request + "\r\n").encode())
    time.sleep(wait)
    if random.random() < 0.5:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    return "client left mid-head" if mid_head else "client left before the answer"


def scenarios(options):
    """(name, weight, call) of the mix."""
    mix = [
        ("ok", 30, lambda: exchange(options, f"/ok/answer/{random.randrange(1000)}")),
        ("ok POST", 6, lambda: exchange(options, "/ok/answer/post", "POST", b'{"n":1}')),
        ("plain", 6, lambda: exchange(options, "/plain/x")),
        ("flap", 10, lambda: exchange(options, "/flap/x")),
        ("ok big, head only", 4, lambda: exchange(options, "/ok/big", head_only=True)),
        ("leave early", 6, lambda: leave_early(
            options, random.choice(("/up-hang/x", "/tok-hang/x", "/up-drip/x", "/ok/big", "/up-silence/x")),
            random.uniform(0, 1.0))),
        ("leave mid-head", 1, lambda: leave_early(options, "/ok/answer/x", random.uniform(0, 0.5), True)),
    ]
    for fault in TOKEN_FAULTS:
        mix.append((f"tok-{fault}", 2, lambda fault=fault: exchange(options, f"/tok-{fault}/x")))
    for fault in UPSTREAM_FAULTS:
        mix.append((f"up-{fault}", 2, lambda fault=fault: exchange(options, f"/up-{fault}/x")))
    return mix


def client(soak, mix):
    names, weights, calls = zip(*mix)
    while not soak.stop.is_set():
        slot = soak.take_slot()
        if slot is None:
            return
        delay = slot - time.monotonic()
        if delay > 0 and soak.stop.wait(delay):
            return
        index = random.choices(range(len(calls)), weights)[0]
        start = time.monotonic()
        kind = calls[index]()
        soak.record(names[index], kind, time.monotonic() - start)


# The proxy's resources, its probe, the fault server's mode.


def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def get(port, path, timeout):
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def probe(soak):
    start = time.monotonic()
    try:
        status, _ = get(soak.options.proxy, "/_tokenproxy/healthz", 2)
        ok = status == 200
    except (OSError, http.client.HTTPException):
        ok = False
    soak.probes.append((ok, time.monotonic() - start))


def sampler(soak):
    pid = soak.options.pid
    while not soak.done.wait(soak.options.sample_seconds):
        try:
            soak.samples.append((time.monotonic() - soak.started, descriptors(pid), rss_kib(pid)))
        except OSError:
            return  # the proxy is gone; the report says so
        probe(soak)


def token_mode(soak, mode):
    try:
        status, body = get(soak.options.faults, f"/_control?token={mode}", 5)
        return json.loads(body) if status == 200 else {}
    except (OSError, http.client.HTTPException, ValueError):
        return {}


def flipper(soak):
    index = 0
    while not soak.stop.wait(soak.options.flip_seconds):
        index += 1
        token_mode(soak, FLIPS[index % len(FLIPS)])
        soak.flips += 1


def run_load(soak, seconds):
    soak.stop.clear()
    threads = [threading.Thread(target=client, args=(soak, scenarios(soak.options)), daemon=True)
               for _ in range(soak.options.clients)]
    threads.append(threading.Thread(target=flipper, args=(soak,), daemon=True))
    for thread in threads:
        thread.start()
    soak.stop.wait(seconds)
    soak.stop.set()
    for thread in threads:
        thread.join(soak.options.client_timeout + 5)
    token_mode(soak, "answer")


def rest(soak):
    """Waits until the descriptor count holds still for three samples a second apart (at least
    --settle seconds, at most three times that); returns (descriptors, RSS KiB)."""
    pid, begin = soak.options.pid, time.monotonic()
    seen = []
    try:
        while time.monotonic() - begin < 3 * soak.options.settle:
            time.sleep(1)
            seen.append(descriptors(pid))
            if time.monotonic() - begin >= soak.options.settle and len(set(seen[-3:])) == 1 and len(seen) >= 3:
                break
        return seen[-1], rss_kib(pid)
    except OSError:
        return 0, 0  # the proxy is gone; the report says so


# The report.


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def table(rows, title):
    print(f"{title:<52} {'count':>7} {'p99 ms':>8} {'worst ms':>9}")
    for name, values in rows:
        print(f"  {name:<50} {len(values):>7} {percentile(values, 0.99) * 1000:>8.0f} {max(values) * 1000:>9.0f}")


def access_log(path):
    """Counts the proxy's JSON log lines: access lines by what an operator sees in them, the
    other lines by level and message."""
    access, other, unparsed = collections.Counter(), collections.Counter(), 0
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            for line in log:
                try:
                    entry = json.loads(line)
                except ValueError:
                    unparsed += 1
                    continue
                if entry.get("message") == "request":
                    key = (entry.get("http.response.status_code"), entry.get("error.code", "-"),
                           entry.get("tokenproxy.upstream_error", "-"),
                           "aborted" if entry.get("tokenproxy.aborted") else "-")
                    access[key] += 1
                else:
                    message = re.sub(r"\[\d+\]", "[i]", entry.get("message", ""))[:70]
                    other[(entry.get("log.level"), message)] += 1
    except OSError:
        return
    print("access log (warm-up included): status, error.code, upstream_error, aborted")
    for (status, code, upstream, aborted), count in sorted(access.items(), key=lambda item: str(item[0])):
        print(f"  {status} {code} {upstream} {aborted}: {count}")
    print(f"other log lines (top 8 of {sum(other.values())}, {unparsed} not JSON)")
    for (level, message), count in other.most_common(8):
        print(f"  {level} {message}: {count}")


def metrics(soak):
    try:
        status, body = get(soak.options.proxy, "/_tokenproxy/metrics", 5)
    except (OSError, http.client.HTTPException):
        print("metrics: no answer")
        return
    wanted = ("tokenproxy_token_requests_total", "tokenproxy_upstream_errors_total", "tokenproxy_open_connections")
    lines = sorted(line for line in body.decode().splitlines() if line.startswith(wanted))
    minutes = (time.monotonic() - soak.started) / 60
    print(f"metrics (HTTP {status}, warm-up included; token requests also per minute of the run):")
    for line in lines:
        rate = ""
        if line.startswith("tokenproxy_token_requests_total"):
            rate = f"  ({float(line.rsplit(' ', 1)[1]) / minutes:.1f}/min)"
        print(f"  {line}{rate}")


def report(soak, start, end, elapsed):
    options, failures = soak.options, []
    results = soak.results
    print(f"== soak: {elapsed / 60:.1f} min, {options.clients} clients, at most {options.rate:g} request starts/s")
    print(f"requests sent: {len(results)} (warm-up: {soak.warmup_requests}, not counted below)")
    by_kind, by_scenario = collections.defaultdict(list), collections.defaultdict(list)
    kinds_of = collections.defaultdict(collections.Counter)
    for scenario, kind, seconds in results:
        by_kind[kind].append(seconds)
        by_scenario[scenario].append(seconds)
        kinds_of[scenario][kind] += 1
    table(sorted(by_kind.items(), key=lambda item: -len(item[1])), "answers by kind")
    print(f"{'by scenario (kinds seen)':<52} {'count':>7} {'p99 ms':>8} {'worst ms':>9}")
    for scenario, values in sorted(by_scenario.items()):
        print(f"  {scenario:<50} {len(values):>7} {percentile(values, 0.99) * 1000:>8.0f} "
              f"{max(values) * 1000:>9.0f}")
        kinds = "; ".join(f"{kind} x{count}" for kind, count in kinds_of[scenario].most_common(4))
        print(f"      {kinds}")
    timeouts = sum(len(values) for kind, values in by_kind.items() if kind.startswith("client timeout"))
    failed = [seconds for ok, seconds in soak.probes if not ok]
    worst = max((seconds for _, seconds in soak.probes), default=0)
    print(f"healthz: {len(soak.probes)} probes, {len(failed)} unanswered, worst {worst * 1000:.0f} ms")
    counted = [sample for sample in soak.samples if start[2] <= sample[0] <= end[2]]
    max_fd = max([start[0], end[0]] + [sample[1] for sample in counted])
    max_rss = max([start[1], end[1]] + [sample[2] for sample in counted])
    fd_drift, rss_drift = end[0] - start[0], end[1] - start[1]
    print(f"descriptors: start {start[0]}, max {max_fd}, end {end[0]}, drift {fd_drift:+d} "
          f"(limit {options.max_fd_drift})")
    print(f"RSS KiB: start {start[1]}, max {max_rss}, end {end[1]}, drift {rss_drift:+d} "
          f"(limit {options.max_rss_drift_kib})")
    state = token_mode(soak, "answer")
    print(f"fault server: {state.get('open_connections', '?')} connections open at the end, "
          f"{state.get('tokens_issued', '?')} tokens issued, token endpoint flipped {soak.flips} times")
    metrics(soak)
    access_log(options.log)
    if fd_drift > options.max_fd_drift:
        failures.append(f"descriptors grew by {fd_drift}")
    if rss_drift > options.max_rss_drift_kib:
        failures.append(f"RSS grew by {rss_drift} KiB")
    if failed:
        failures.append(f"{len(failed)} healthz probes unanswered")
    if timeouts:
        failures.append(f"{timeouts} client timeouts")
    if not os.path.exists(f"/proc/{options.pid}"):
        failures.append("the proxy exited")
    print("result: " + ("FAIL: " + "; ".join(failures) if failures else "PASS"))
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--proxy", type=int, required=True, help="the proxy's port on 127.0.0.1")
    parser.add_argument("--faults", type=int, required=True, help="the fault server's port on 127.0.0.1")
    parser.add_argument("--pid", type=int, required=True, help="the proxy's process id")
    parser.add_argument("--log", required=True, help="the proxy's JSON log")
    parser.add_argument("--minutes", type=float, default=2)
    parser.add_argument("--warmup", type=float, default=20, help="seconds of load before the start figures")
    parser.add_argument("--settle", type=float, default=8, help="least seconds of rest before a figure")
    parser.add_argument("--clients", type=int, default=48)
    parser.add_argument("--rate", type=float, default=100, help="request starts a second, at most")
    parser.add_argument("--max-requests", type=int, default=1_000_000)
    parser.add_argument("--client-timeout", type=float, default=15)
    parser.add_argument("--sample-seconds", type=float, default=2)
    parser.add_argument("--flip-seconds", type=float, default=8)
    parser.add_argument("--max-fd-drift", type=int, default=8)
    parser.add_argument("--max-rss-drift-kib", type=int, default=16384)
    options = parser.parse_args()
    soak = Soak(options)
    threading.Thread(target=sampler, args=(soak,), daemon=True).start()
    run_load(soak, options.warmup)
    start = rest(soak) + (time.monotonic() - soak.started,)
    soak.counting = True
    begin = time.monotonic()
    run_load(soak, options.minutes * 60)
    soak.counting = False
    elapsed = time.monotonic() - begin
    end = rest(soak) + (time.monotonic() - soak.started,)
    soak.done.set()
    sys.exit(report(soak, start, end, elapsed))


if __name__ == "__main__":
    main()
