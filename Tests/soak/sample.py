"""Samples the soak's processes every INTERVAL seconds into a CSV until SIGTERM: each process's
resident set (VmRSS of /proc/PID/status, KiB) and its anonymous part (RssAnon: the heap and the
stacks, without the mapped executable and libraries); for a process given a /metrics URL, the
memory SQLite holds in it (faresync_sqlite_memory_bytes) and its heap in use (allocated and not
freed: faresync_heap_in_use_bytes), both KiB; and the worker's mirror gauges
(the mirror's position, how many feed positions it is behind, and for how long it has been behind).
The gauges are read every second, and a row holds the greatest lag of its interval, so that a
spike between two rows is not missed. A sample that cannot be read (a process gone, /metrics not
answering) is written empty, so that the report sees the gap instead of a made-up value.

Usage: python3 sample.py CSV INTERVAL METRICS_URL NAME=PID[,URL]…
  METRICS_URL: the worker's /metrics; URL: the process's own /metrics.
"""
import csv
import signal
import sys
import time
import urllib.request

path, interval, metrics_url = sys.argv[1], float(sys.argv[2]), sys.argv[3]
processes = []
for arg in sys.argv[4:]:
    name, _, rest = arg.partition("=")
    pid, _, url = rest.partition(",")
    processes.append((name, pid, url))
GAUGES = ["faresync_mirror_position", "faresync_mirror_lag_positions", "faresync_mirror_lag_seconds"]
stopping = False


def stop(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)


def memory_kib(pid):
    """VmRSS and RssAnon of the process, KiB (empty when it cannot be read)."""
    found = {"VmRSS:": "", "RssAnon:": ""}
    try:
        for line in open(f"/proc/{pid}/status"):
            key = line.split(":", 1)[0] + ":"
            if key in found:
                found[key] = int(line.split()[1])
    except OSError:
        pass
    return [found["VmRSS:"], found["RssAnon:"]]


PROCESS_GAUGES = {"sqlite": "faresync_sqlite_memory_bytes", "heap": "faresync_heap_in_use_bytes"}


def process_kib(url):
    """The process's own memory gauges, KiB, in PROCESS_GAUGES' order (empty where not answered)."""
    values = gauges(url, list(PROCESS_GAUGES.values()))
    return ["" if values[name] == "" else round(values[name] / 1024) for name in PROCESS_GAUGES.values()]


def gauges(url=metrics_url, names=GAUGES):
    values = dict.fromkeys(names, "")
    try:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    except OSError:
        return values
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in values:
            values[name] = float(value)
    return values


with open(path, "w", newline="") as out:
    writer = csv.writer(out)
    header = ["seconds"]
    for name, _, url in processes:
        header += [f"rss_{name}", f"anon_{name}"] + ([f"{part}_{name}" for part in PROCESS_GAUGES] if url else [])
    writer.writerow(header + GAUGES)
    started = time.monotonic()
    while not stopping:
        row = [round(time.monotonic() - started, 1)]
        for _, pid, url in processes:
            row += memory_kib(pid) + (process_kib(url) if url else [])
        worst = gauges()
        deadline = time.monotonic() + interval
        while not stopping and time.monotonic() < deadline:
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            values = gauges()
            for name in GAUGES[1:]:
                if values[name] != "" and (worst[name] == "" or values[name] > worst[name]):
                    worst[name] = values[name]
        writer.writerow(row + [worst[g] for g in GAUGES])
        out.flush()
