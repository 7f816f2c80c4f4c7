"""The live check: a listener opened on one user's fareContracts and reservations (Google's Python
client, on_snapshot) while a worker with --firestore consumes traffic produced as it runs.
It must see the reservation appear, then the contract appear and the reservation go, each within
2 s of the worker committing it. When the worker commits is read from its SQLite store directly
(another reader of the file, polling every 10 ms).

usage: live_listener.py pick LOG            prints "uid orderId contractId gap line" of the user to watch
                                            (gap: messages between the reservation and the contract;
                                            line: the contract's line of LOG, from 1)
       live_listener.py stored STORE PATH   waits (up to 60 s) until the SQLite store holds PATH
       live_listener.py watch STORE PROJECT UID ORDER CONTRACT
       (prints "listening" once its listeners are open; FIRESTORE_EMULATOR_HOST names the emulator)
"""

import hashlib
import json
import sqlite3
import sys
import threading
import time

LIMIT = 2.0


def pick(log):
    """The user whose reservation and fare contract lie farthest apart in the log, so that they
    reach the worker in different batches even at a high rate."""
    messages = [json.loads(line) for line in open(log, encoding="utf-8")]
    reservations = {}
    best = None
    for i, m in enumerate(messages):
        try:
            event = json.loads(m.get("payload") or "")
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        headers = m.get("headers") or []
        binary = dict(zip(headers[::2], headers[1::2]))
        if "ce_type" in binary:  # binary mode: the type in a header, the value is the data
            kind, data = binary["ce_type"], event
        elif isinstance(event.get("data"), dict):
            kind, data = event.get("type"), event["data"]
        else:
            continue
        if kind == "ticketing.reservation.created":
            reservations[data.get("orderId")] = (i, data.get("customerId"))
        elif kind == "ticketing.payment.updated" and data.get("status") in ("CANCEL", "CREDIT"):
            reservations.pop(data.get("orderId"), None)
        elif kind == "abt.farecontract.changed" and data.get("orderId") in reservations:
            start, uid = reservations[data["orderId"]]
            account = "ATB:CustomerAccount:" + hashlib.sha256(uid.encode()).hexdigest()[:16]
            del reservations[data["orderId"]]  # the first contract of the order is the one that reconciles
            if data.get("customerAccountId") == account and (best is None or i - start > best[0]):
                best = (i - start, uid, data["orderId"], data["id"], i + 1)
    if best is None:
        raise SystemExit("no reservation followed by its contract in the log")
    print(best[1], best[2], best[3], best[0], best[4])


def held(store, paths):
    """Which of `paths` the worker's SQLite store holds, read as another reader of the file; None
    where it cannot be read (the worker has not created it yet)."""
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1)
        try:
            return {path for path in paths if db.execute("SELECT 1 FROM documents WHERE path = ?", (path,)).fetchone() is not None}
        finally:
            db.close()
    except sqlite3.Error:
        return None


def stored(store, path):
    """Waits until the worker's SQLite store holds `path`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if held(store, [path]):
            return
        time.sleep(0.01)
    raise SystemExit(f"the store never held {path}")


def watch(store, project, uid, order, contract):
    from google.cloud import firestore

    seen = {}
    lock = threading.Lock()
    started = time.monotonic()

    def note(name):
        with lock:
            seen.setdefault(name, time.monotonic())

    def on_contracts(snapshot, changes, read_time):
        for change in changes:
            if change.document.id == contract and change.type.name == "ADDED":
                note("contract appears (listener)")

    def on_reservations(snapshot, changes, read_time):
        for change in changes:
            if change.document.id == order:
                note("reservation appears (listener)" if change.type.name == "ADDED" else "reservation goes (listener)" if change.type.name == "REMOVED" else "reservation changes (listener)")

    db = firestore.Client(project=project)
    customer = db.collection("customers").document(uid)
    watches = [customer.collection("fareContracts").on_snapshot(on_contracts),
               customer.collection("reservations").on_snapshot(on_reservations)]
    print("listening", flush=True)

    reservation_path = f"customers/{uid}/reservations/{order}"
    contract_path = f"customers/{uid}/fareContracts/{contract}"
    present = False
    deadline = started + 60
    while time.monotonic() < deadline:
        paths = held(store, [reservation_path, contract_path])
        if paths is not None:
            if reservation_path in paths:
                present = True
                note("reservation appears (store)")
            elif present:
                note("reservation goes (store)")
            if contract_path in paths:
                note("contract appears (store)")
        with lock:
            if all(f"{what} (listener)" in seen for what in ("reservation appears", "contract appears", "reservation goes")):
                break
        time.sleep(0.01)
    time.sleep(0.2)
    for w in watches:
        w.unsubscribe()

    problems = []
    for what in ("reservation appears", "contract appears", "reservation goes"):
        store_time, listener_time = seen.get(f"{what} (store)"), seen.get(f"{what} (listener)")
        if listener_time is None:
            problems.append(f"the listener never saw: {what}")
            continue
        if store_time is None:
            problems.append(f"the store never showed: {what}")
            continue
        delay = listener_time - store_time
        print(f"{what}: committed at +{store_time - started:.3f} s, seen by the listener {delay:.3f} s later")
        if delay > LIMIT:
            problems.append(f"{what}: {delay:.3f} s after the commit (limit {LIMIT} s)")
    order_seen = sorted((t, k) for k, t in seen.items() if k.endswith("(listener)"))
    print("listener order:", ", ".join(k.replace(" (listener)", "") for _, k in order_seen))
    if "reservation appears (listener)" in seen and "contract appears (listener)" in seen:
        if not seen["reservation appears (listener)"] < seen["contract appears (listener)"]:
            problems.append("the contract appeared before the reservation")
    if "reservation appears (listener)" in seen and "reservation goes (listener)" in seen:
        if not seen["reservation appears (listener)"] < seen["reservation goes (listener)"]:
            problems.append("the reservation went before it appeared")
    for p in problems:
        print("PROBLEM", p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    if sys.argv[1] == "pick":
        pick(sys.argv[2])
    elif sys.argv[1] == "stored":
        stored(sys.argv[2], sys.argv[3])
    else:
        watch(*sys.argv[2:7])
