"""Samples the soak's processes every INTERVAL seconds into a CSV until SIGTERM: each process's
resident set (VmRSS of /proc/PID/status, KiB) and the worker's mirror gauges from its /metrics
(the mirror's position, how many feed positions it is behind, and for how long it has been behind).
The gauges are read every second, and a row holds the greatest lag of its interval, so that a
spike between two rows is not missed. A sample that cannot be read (a process gone, /metrics not
answering) is written empty, so that the report sees the gap instead of a made-up value.

Usage: python3 sample.py CSV INTERVAL METRICS_URL NAME=PID…
"""
import csv
import signal
import sys
import time
import urllib.request

path, interval, metrics_url = sys.argv[1], float(sys.argv[2]), sys.argv[3]
processes = [arg.split("=", 1) for arg in sys.argv[4:]]
GAUGES = ["faresync_mirror_position", "faresync_mirror_lag_positions", "faresync_mirror_lag_seconds"]
stopping = False


def stop(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return ""


def gauges():
    values = dict.fromkeys(GAUGES, "")
    try:
        text = urllib.request.urlopen(metrics_url, timeout=5).read().decode()
    except OSError:
        return values
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in values:
            values[name] = float(value)
    return values


with open(path, "w", newline="") as out:
    writer = csv.writer(out)
    writer.writerow(["seconds"] + [f"rss_{name}" for name, _ in processes] + GAUGES)
    started = time.monotonic()
    while not stopping:
        row = [round(time.monotonic() - started, 1)] + [rss_kib(pid) for _, pid in processes]
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
