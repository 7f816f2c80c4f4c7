"""Users acting at once, for seed_latency.py and listener_floor.py: each user a call of
`act(index, count, everyone_ready)` that returns its waits in seconds, run in a process of its own
(`processes`, as people act on phones of their own) or as a thread of this process (`threads`,
sharing one interpreter: what that costs shows as the difference between the two).

`act` waits on `everyone_ready` (a barrier) once it is set up, so that no user's set-up is timed.
Given `channels`, user i's call gets `channel=channels[i]` too.

With FARESYNC_HOLD_BUYERS=1, the users' processes run on the last of this process's CPUs only,
where it has two or more, as phones take none of the servers' CPU; this process, and anything it
started before, keep every CPU they had. Users as threads are not held.
"""
import concurrent.futures
import math
import multiprocessing
import os
import queue
import sys
import threading
import time


def _act_in_process(act, index, count, everyone_ready, results, extra):
    """`act` in a process of its own: its waits, or its failure, onto `results`."""
    try:
        results.put((index, act(index, count, everyone_ready, **extra), None))
    except Exception as error:  # noqa: BLE001  (the parent ends the measurement)
        everyone_ready.abort()
        results.put((index, [], f"{type(error).__name__}: {error}"))


def _held(start):
    """Calls `start()` with this thread held to its last CPU, under FARESYNC_HOLD_BUYERS=1 and with
    two CPUs or more, so that the processes it starts are held from their first instruction; then
    gives the thread back its CPUs."""
    allowed = os.sched_getaffinity(0)
    if os.environ.get("FARESYNC_HOLD_BUYERS") != "1" or len(allowed) < 2:
        return start()
    os.sched_setaffinity(0, {max(allowed)})
    try:
        return start()
    finally:
        os.sched_setaffinity(0, allowed)


def waits(act, users, actions, mode, channels=None):
    """Every user's waits, sorted: ACTIONS shared out among USERS users run as MODE says."""
    shares = [actions // users + (1 if i < actions % users else 0) for i in range(users)]
    extras = [{"channel": channels[i]} if channels else {} for i in range(users)]
    if mode == "threads":
        barrier = threading.Barrier(users)
        with concurrent.futures.ThreadPoolExecutor(max_workers=users) as pool:
            futures = [pool.submit(act, i, share, barrier, **extras[i]) for i, share in enumerate(shares)]
            return sorted(w for f in futures for w in f.result())
    if mode != "processes":
        raise ValueError(f"mode {mode}: processes or threads")
    # Spawned, not forked: each process imports gRPC and the Firestore client afresh.
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(users), context.Queue()
    processes = [
        context.Process(target=_act_in_process, args=(act, i, share, barrier, results, extras[i]), daemon=True) for i, share in enumerate(shares)
    ]
    _held(lambda: [process.start() for process in processes])
    collected, failures, reported, ended = [], [], set(), {}
    deadline = time.monotonic() + 300
    while len(reported) < users and time.monotonic() < deadline:
        try:
            index, some, failure = results.get(timeout=1)
        except queue.Empty:
            # A user whose process ended without a word (a crash, or a failure before it could say
            # so): its failure, once what it may have sent had time to arrive; the others stop waiting.
            now = time.monotonic()
            for i, process in enumerate(processes):
                if i not in reported and process.exitcode is not None and now - ended.setdefault(i, now) > 2:
                    reported.add(i)
                    failures.append(f"user {i}: its process ended with status {process.exitcode} without a word")
                    barrier.abort()
            continue
        reported.add(index)
        collected += some
        if failure:
            failures.append(f"user {index}: {failure}")
    if len(reported) < users:
        failures.append(f"{users - len(reported)} users said nothing within 300 s")
    for process in processes:
        process.join(timeout=10)
    if failures:
        raise RuntimeError("; ".join(failures[:3]))
    return sorted(collected)


def rank(sorted_waits, q):
    """The nearest-rank percentile."""
    return sorted_waits[max(0, math.ceil(q * len(sorted_waits)) - 1)]


def report(name, act, users, actions, mode, counted, channels=None):
    """Runs `waits` and prints `NAME p50=S p99=S max=S COUNTED=N mode=MODE` in seconds; on any
    failure prints `NAME: the failure` and exits 1."""
    try:
        measured = waits(act, users, actions, mode, channels)
    except Exception as error:  # noqa: BLE001  (any failure ends the measurement)
        print(f"{name}: {error}")
        sys.exit(1)
    print(f"{name} p50={rank(measured, 0.5):.4f} p99={rank(measured, 0.99):.4f} max={measured[-1]:.4f} {counted}={len(measured)} mode={mode}")
