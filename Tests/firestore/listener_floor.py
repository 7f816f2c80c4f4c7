"""The floor of the seed latency: what the Firestore emulator and Google's Python client take alone,
in the same shape. USERS users each listen to their own `customers/{uid}/fareContracts` (on_snapshot,
as seed_latency.py does), and all at once write, from a second client as the mirror does, PURCHASES ÷
USERS documents one after another, each waiting for its listener before the next. No FareSync runs:
the time from a write's call to its listener is the least any mirror into this emulator can add.

MODE says where the users run, as in seed_latency.py: `processes` (the default), each with its
own listening and writing clients, or `threads`, all in this process with one of each.

Prints `listener_floor p50=S p99=S max=S writes=N` in seconds; exits 1 when a write does not reach
its listener within 10 s.

Usage: listener_floor.py FIRESTORE_HOST PROJECT USERS PURCHASES [processes|threads]
"""
import os
import sys
import threading
import time

import crowd

host, project, users, purchases = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
mode = sys.argv[5] if len(sys.argv) > 5 else "processes"
os.environ["FIRESTORE_EMULATOR_HOST"] = host
from google.cloud import firestore  # noqa: E402  (reads FIRESTORE_EMULATOR_HOST when imported)

listening = firestore.Client(project=project)
writing = firestore.Client(project=project)
seen = {}  # document path -> monotonic time a listener first saw it
seen_changed = threading.Condition()


def on_snapshot(snapshot, changes, read_time):
    now = time.monotonic()
    with seen_changed:
        for change in changes:
            seen.setdefault(change.document.reference.path, now)
        seen_changed.notify_all()


def user(index, count, everyone_listening):
    collection = f"customers/floor-{index}/fareContracts"
    first = threading.Event()
    watch = listening.collection(collection).on_snapshot(lambda *args: (on_snapshot(*args), first.set()))
    if not first.wait(timeout=30):
        raise RuntimeError(f"the listener of {collection} had no first snapshot within 30 s")
    everyone_listening.wait(timeout=120)
    waits = []
    try:
        for n in range(count):
            path = f"{collection}/c{n}"
            started = time.monotonic()
            writing.document(path).set({"orderId": f"floor-{index}-{n}", "n": n})
            with seen_changed:
                if not seen_changed.wait_for(lambda: path in seen, timeout=10):
                    raise RuntimeError(f"{path} did not reach its listener within 10 s")
                waits.append(seen[path] - started)
    finally:
        watch.unsubscribe()
    return waits


if __name__ == "__main__":
    crowd.report("listener_floor", user, users, purchases, mode, "writes")
