"""What a person waits for after paying: from the terminal's capture callback to the fare contract
seen by a Firestore listener on the mirror (Google's Python client, on_snapshot, as the app
listens). USERS users sign up and wait for their claims, each listens to its own
`customers/{uid}/fareContracts`, and all buy at once, each its PURCHASES ÷ USERS tickets one
after another (every purchase waits for its contract before the next).

MODE says where the users run: `processes` (the default), each in a process of its own with its
own HTTP session and Firestore client, as people buy on phones of their own; or `threads`, all in
this process, sharing its interpreter (the harness's own share of the wait shows as the difference).

Prints `seed_latency p50=S p99=S max=S purchases=N` in seconds; exits 1 when a contract does not
come within 10 s or a step of the flow fails. With STAGES_FILE, also appends one JSON line a
purchase to it: `{"order","path","started","answered","seen"}`, the contract's document path and
the wall-clock times (seconds since the epoch) of the capture callback's request, its answer, and
the listener's first sight of the contract, to be joined with the spans FareSync wrote
(`FARESYNC_SPANS`) into the stage table of `faresync-bench --parts latency`.

Usage: seed_latency.py BASE_URL FIRESTORE_HOST PROJECT USERS PURCHASES [processes|threads [STAGES_FILE]]
"""
import base64
import json
import os
import sys
import threading
import time

import requests

import crowd

base, host, project, users, purchases = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
mode = sys.argv[6] if len(sys.argv) > 6 else "processes"
stages_file = sys.argv[7] if len(sys.argv) > 7 else None
os.environ["FIRESTORE_EMULATOR_HOST"] = host
from google.cloud import firestore  # noqa: E402  (reads FIRESTORE_EMULATOR_HOST when imported)

IDENTITY = f"{base}/identitytoolkit.googleapis.com/v1"
PRODUCT = "ATB:PreassignedFareProduct:8808c360"
db = firestore.Client(project=project)
seen = {}  # order id -> (monotonic time, wall-clock time, document path) a listener first saw its fare contract
seen_changed = threading.Condition()


def on_contracts(snapshot, changes, read_time):
    now, wall = time.monotonic(), time.time()
    with seen_changed:
        for change in changes:
            order = (change.document.to_dict() or {}).get("orderId")
            if order and order not in seen:
                seen[order] = (now, wall, change.document.reference.path)
        seen_changed.notify_all()


def listen(uid):
    """Listens to the user's fare contracts; returns once the listener's first snapshot came, so
    that the listen stream is open before anything is timed (as an app's screen is open before its
    user pays)."""
    first = threading.Event()

    def on_snapshot(snapshot, changes, read_time):
        on_contracts(snapshot, changes, read_time)
        first.set()

    watch = db.collection("customers").document(uid).collection("fareContracts").on_snapshot(on_snapshot)
    if not first.wait(timeout=30):
        raise RuntimeError(f"the listener of {uid} had no first snapshot within 30 s")
    return watch


def signed_up_user(http):
    """A new user whose ID token carries the claims; the app refreshes until it does."""
    session = http.post(f"{IDENTITY}/accounts:signUp?key=fake", json={"returnSecureToken": True}).json()
    uid, token = session["localId"], session["idToken"]
    deadline = time.monotonic() + 30
    while True:
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "==="))
        if "customer_number" in claims and "abt_id" in claims:
            return uid, token
        if time.monotonic() > deadline:
            raise RuntimeError(f"the claims of {uid} never appeared")
        time.sleep(0.05)
        token = http.post(f"{base}/securetoken.googleapis.com/v1/token?key=fake",
                          data={"grant_type": "refresh_token", "refresh_token": session["refreshToken"]}).json()["id_token"]


def purchase(http, token, key):
    """Buys one ticket up to the capture callback; returns its order id, when the callback was
    called (monotonic), and when it was called and answered (wall clock)."""
    auth = {"Authorization": f"Bearer {token}"}
    offers = http.post(f"{base}/ticket/v1/search", headers=auth, json={
        "products": [PRODUCT], "travellers": [{"id": "me", "userType": "ADULT", "count": 1}], "zones": ["ATB:TariffZone:1"]})
    offers.raise_for_status()
    reserved = http.post(f"{base}/ticket/v1/reserve", headers={**auth, "Idempotency-Key": key},
                         json={"offers": [{"offerId": offers.json()["offers"][0]["offerId"], "count": 1}], "paymentType": 2})
    reserved.raise_for_status()
    order = reserved.json()
    token = order["url"].split("t=")[1]
    pressed = http.post(f"{base}/ticket/v1/terminal/{order['orderId']}/pay?t={token}", allow_redirects=False)
    if pressed.status_code != 303:
        raise RuntimeError(f"the terminal's pay answered {pressed.status_code}")
    started, started_wall = time.monotonic(), time.time()
    back = http.get(pressed.headers["Location"], allow_redirects=False)
    answered_wall = time.time()
    if back.status_code != 302 or "CAPTURE" not in back.headers["Location"]:
        raise RuntimeError(f"the capture callback answered {back.status_code} {back.headers.get('Location')}")
    return order["orderId"], started, (started_wall, answered_wall)


def customer(index, count, everyone_listening):
    """One user's purchases, one after another: each order id's wait in seconds."""
    http = requests.Session()
    uid, token = signed_up_user(http)
    watch = listen(uid)
    # Every user signed up and listening before the first purchase: the sign-ups are not the wait.
    everyone_listening.wait(timeout=120)
    waits = []
    try:
        for n in range(count):
            order, started, (started_wall, answered_wall) = purchase(http, token, f"latency-{index}-{n}")
            with seen_changed:
                if not seen_changed.wait_for(lambda: order in seen, timeout=10):
                    raise RuntimeError(f"the fare contract of {order} did not reach the listener within 10 s")
                seen_at, seen_wall, path = seen[order]
            waits.append(seen_at - started)
            if stages_file:
                record = {"order": order, "path": path, "started": started_wall, "answered": answered_wall, "seen": seen_wall}
                append_line(stages_file, json.dumps(record))
    finally:
        watch.unsubscribe()
    return waits


def append_line(path, line):
    """One write(2) to a file opened for appending: lines of several processes never mix."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, (line + "\n").encode())
    finally:
        os.close(descriptor)


if __name__ == "__main__":
    crowd.report("seed_latency", customer, users, purchases, mode, "purchases")
