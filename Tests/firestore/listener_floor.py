"""The floor of the seed latency: what the Firestore emulator and Google's Python client take alone,
in the same shape. USERS users each listen to their own `customers/{uid}/fareContracts` (on_snapshot,
as seed_latency.py does), and all at once write, from a second client as the mirror does, PURCHASES ÷
USERS documents one after another, each waiting for its listener before the next. No FareSync runs:
the time from a write's call to its listener is the least any mirror into this emulator can add.

MODE says where the users run, as in seed_latency.py: `processes` (the default), each listening
in a process of its own, its writes made by a process that writes for all of them as the mirror
does, with a thread a user (held to no CPU when the users are: crowd.py); or `threads`, all in
this process with one client listening and one writing.

SHAPE says what each purchase writes: `plain` (the default), one small document; or `contract`,
what the mirror writes for a purchase, in documents of the same shape: the reservation first
(untimed, as it is written before the payment), then, timed, the fare contract and the
reservation's removal in one commit. It is lighter than the mirror's: the payment's update of the
reservation, the mirror's position document and several purchases in one commit are not in it.

Prints `listener_floor p50=S p99=S max=S writes=N` in seconds; exits 1 when a write does not reach
its listener within 10 s.

Usage: listener_floor.py FIRESTORE_HOST PROJECT USERS PURCHASES [processes|threads [plain|contract]]
"""
import concurrent.futures
import datetime
import multiprocessing
import os
import queue
import sys
import threading
import time

import crowd

host, project, users, purchases = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
mode = sys.argv[5] if len(sys.argv) > 5 else "processes"
shape = sys.argv[6] if len(sys.argv) > 6 else "plain"
if shape not in ("plain", "contract"):
    sys.exit(f"listener_floor.py: SHAPE is plain or contract, not {shape}")
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


def fare_contract(order, now):
    """A fare contract as the mirror writes one: a travel right, its date-times as timestamps."""
    account = "ATB:CustomerAccount:ffa288c38083e205"
    right = {"authorityRef": "ATB:Authority:2", "customerAccountId": account, "endDateTime": now + datetime.timedelta(minutes=90),
             "fareProductRef": "ATB:PreassignedFareProduct:8808c360", "id": f"ATB:TravelRight:{order}-1", "startDateTime": now,
             "status": 4, "tariffZoneRefs": ["ATB:TariffZone:1"], "userProfileRef": "ATB:UserProfile:adult"}
    return {"created": now, "customerAccountId": account, "id": f"ATB:FareContract:{order}", "orderId": order,
            "paymentType": ["VIPPS"], "state": 1, "totalAmount": "42.00", "totalTaxAmount": "4.50", "travelRights": [right],
            "version": "1"}


def reservation(order, now):
    """An open reservation as the mirror writes one."""
    return {"created": now, "customerAccountId": "ATB:CustomerAccount:ffa288c38083e205", "orderId": order,
            "paymentId": 1195921319, "paymentType": 2, "transactionId": 2063271223,
            "url": f"http://127.0.0.1/ticket/v1/terminal/{order}?t=bb7bb8e7e9a4e726d7c5044600fec249"}


def write(index, n, path):
    """One purchase's writes; returns when its timed part started (monotonic)."""
    order = f"floor-{index}-{n}"
    if shape == "plain":
        started = time.monotonic()
        writing.document(path).set({"orderId": order, "n": n})
        return started
    now = datetime.datetime.now(datetime.timezone.utc)
    reserved = writing.document(f"customers/floor-{index}/reservations/{order}")
    reserved.set(reservation(order, now))
    started = time.monotonic()
    batch = writing.batch()
    batch.set(writing.document(path), fare_contract(order, now))
    batch.delete(reserved)
    batch.commit()
    return started


def serve_writes(requests, replies):
    """The writer of the users in processes: each request `(index, n)` written on a thread of its
    own, and `(when its timed part started, None)` or `(None, the error)` put on `replies[index]`;
    None ends it."""

    def answer(index, n):
        try:
            replies[index].put((write(index, n, path_of(index, n)), None))
        except Exception as error:  # noqa: BLE001  (the user says it and ends the measurement)
            replies[index].put((None, f"{type(error).__name__}: {error}"))

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(replies)) as pool:
        while (request := requests.get()) is not None:
            pool.submit(answer, *request)


def path_of(index, n):
    return f"customers/floor-{index}/fareContracts/c{n}"


def user(index, count, everyone_listening, channel=None):
    collection = f"customers/floor-{index}/fareContracts"
    first = threading.Event()
    watch = listening.collection(collection).on_snapshot(lambda *args: (on_snapshot(*args), first.set()))
    if not first.wait(timeout=30):
        raise RuntimeError(f"the listener of {collection} had no first snapshot within 30 s")
    everyone_listening.wait(timeout=120)
    waits = []
    try:
        for n in range(count):
            path = path_of(index, n)
            if channel:
                requests, reply = channel
                requests.put((index, n))
                try:
                    started, error = reply.get(timeout=10)
                except queue.Empty:
                    raise RuntimeError(f"the writer did not write {path} within 10 s") from None
                if error:
                    raise RuntimeError(f"the writer failed to write {path}: {error}")
            else:
                started = write(index, n, path)
            with seen_changed:
                if not seen_changed.wait_for(lambda: path in seen, timeout=10):
                    raise RuntimeError(f"{path} did not reach its listener within 10 s")
                waits.append(seen[path] - started)
    finally:
        watch.unsubscribe()
    return waits


if __name__ == "__main__":
    if mode != "processes":
        crowd.report("listener_floor", user, users, purchases, mode, "writes")
        sys.exit(0)
    # Started before the users, so that it keeps every CPU this process has (crowd.py).
    context = multiprocessing.get_context("spawn")
    requests, replies = context.Queue(), [context.Queue() for _ in range(users)]
    writer = context.Process(target=serve_writes, args=(requests, replies), daemon=True)
    writer.start()
    crowd.report("listener_floor", user, users, purchases, mode, "writes", channels=[(requests, reply) for reply in replies])
    requests.put(None)
    writer.join(timeout=10)
