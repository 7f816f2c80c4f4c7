"""The floor of the seed latency: what the Firestore emulator and Google's Python client take alone,
in the same shape. USERS users each listen to their own `customers/{uid}/fareContracts` (on_snapshot,
as seed_latency.py does), and all at once write, from a second client as the mirror does, PURCHASES ÷
USERS documents one after another, each waiting for its listener before the next. No FareSync runs:
the time from a write's call to its listener is the least any mirror into this emulator can add.

MODE says where the users run, as in seed_latency.py: `processes` (the default), each with its
own listening and writing clients, or `threads`, all in this process with one of each.

SHAPE says what each purchase writes: `plain` (the default), one small document; or `contract`,
what the mirror writes for a purchase, in documents of the same shape: the reservation first
(untimed, as it is written before the payment), then, timed, the fare contract and the
reservation's removal in one commit.

Prints `listener_floor p50=S p99=S max=S writes=N` in seconds; exits 1 when a write does not reach
its listener within 10 s.

Usage: listener_floor.py FIRESTORE_HOST PROJECT USERS PURCHASES [processes|threads [plain|contract]]
"""
import datetime
import os
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


def reservation(uid, order, now):
    """An open reservation as the mirror writes one."""
    return {"created": now, "customerAccountId": "ATB:CustomerAccount:ffa288c38083e205", "customerId": uid, "orderId": order,
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
    reserved.set(reservation(f"floor-{index}", order, now))
    started = time.monotonic()
    batch = writing.batch()
    batch.set(writing.document(path), fare_contract(order, now))
    batch.delete(reserved)
    batch.commit()
    return started


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
            started = write(index, n, path)
            with seen_changed:
                if not seen_changed.wait_for(lambda: path in seen, timeout=10):
                    raise RuntimeError(f"{path} did not reach its listener within 10 s")
                waits.append(seen[path] - started)
    finally:
        watch.unsubscribe()
    return waits


if __name__ == "__main__":
    crowd.report("listener_floor", user, users, purchases, mode, "writes")
