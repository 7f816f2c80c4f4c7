"""Users acting at once, for seed_latency.py and listener_floor.py: each user a call of
`act(index, count, everyone_ready)` that returns its waits in seconds, run in a process of its own
(`processes`, as people act on phones of their own) or as a thread of this process (`threads`,
sharing one interpreter: what that costs shows as the difference between the two).

`act` waits on `everyone_ready` (a barrier) once it is set up, so that no user's set-up is timed.
"""
import concurrent.futures
import math
import multiprocessing
import threading


def _act_in_process(act, index, count, everyone_ready, results):
    """`act` in a process of its own: its waits, or its failure, onto `results`."""
    try:
        results.put((index, act(index, count, everyone_ready), None))
    except Exception as error:  # noqa: BLE001  (the parent ends the measurement)
        everyone_ready.abort()
        results.put((index, [], f"{type(error).__name__}: {error}"))


def waits(act, users, actions, mode):
    """Every user's waits, sorted: ACTIONS shared out among USERS users run as MODE says."""
    shares = [actions // users + (1 if i < actions % users else 0) for i in range(users)]
    if mode == "threads":
        barrier = threading.Barrier(users)
        with concurrent.futures.ThreadPoolExecutor(max_workers=users) as pool:
            futures = [pool.submit(act, i, share, barrier) for i, share in enumerate(shares)]
            return sorted(w for f in futures for w in f.result())
    if mode != "processes":
        raise ValueError(f"mode {mode}: processes or threads")
    # Spawned, not forked: each process imports gRPC and the Firestore client afresh.
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(users), context.Queue()
    processes = [context.Process(target=_act_in_process, args=(act, i, share, barrier, results), daemon=True) for i, share in enumerate(shares)]
    for process in processes:
        process.start()
    collected, failures = [], []
    for _ in processes:
        index, some, failure = results.get(timeout=300)
        collected += some
        if failure:
            failures.append(f"user {index}: {failure}")
    for process in processes:
        process.join()
    if failures:
        raise RuntimeError("; ".join(failures[:3]))
    return sorted(collected)


def rank(sorted_waits, q):
    """The nearest-rank percentile."""
    return sorted_waits[max(0, math.ceil(q * len(sorted_waits)) - 1)]
