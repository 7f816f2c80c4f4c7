"""The seed flow over HTTP as the app does it, for many users at once, with Python `requests`:
anonymous sign-up, refresh until the claims appear, search, reserve, open the terminal, then pay,
cancel or decline; the paid ones' fare contracts appear and their reservations go.

Usage: python3 seed_flow.py BASE_URL USERS
"""
import base64
import concurrent.futures
import json
import sys
import time

import requests

base = sys.argv[1]
users = int(sys.argv[2])
IDENTITY = f"{base}/identitytoolkit.googleapis.com/v1"
PRODUCT = "ATB:PreassignedFareProduct:8808c360"


def flow(i):
    """One user's flow; returns (uid, outcome, order id, what went wrong or None)."""
    http = requests.Session()
    session = http.post(f"{IDENTITY}/accounts:signUp?key=fake", json={"returnSecureToken": True}).json()
    uid, id_token, refresh_token = session["localId"], session["idToken"], session["refreshToken"]
    # The app force-refreshes the token, up to three times with a growing pause, until it carries
    # the claims the user-created trigger sets.
    pause = 0.5
    for attempt in range(4):
        claims = json.loads(base64.urlsafe_b64decode(id_token.split(".")[1] + "==="))
        if "customer_number" in claims and "abt_id" in claims:
            break
        if attempt == 3:
            return uid, None, None, "the claims never appeared"
        time.sleep(pause)
        pause *= 2
        refreshed = http.post(f"{base}/securetoken.googleapis.com/v1/token?key=fake",
                              data={"grant_type": "refresh_token", "refresh_token": refresh_token}).json()
        id_token = refreshed["id_token"]
    lookup = http.post(f"{IDENTITY}/accounts:lookup?key=fake", json={"idToken": id_token}).json()
    if "customer_number" not in lookup["users"][0].get("customAttributes", ""):
        return uid, None, None, "accounts:lookup shows no claims"
    auth = {"Authorization": f"Bearer {id_token}"}
    offers = http.post(f"{base}/ticket/v1/search", headers=auth, json={
        "products": [PRODUCT], "travellers": [{"id": "me", "userType": "ADULT", "count": 1}], "zones": ["ATB:TariffZone:1"]})
    if offers.status_code != 200:
        return uid, None, None, f"search answered {offers.status_code}: {offers.text}"
    offer = offers.json()["offers"][0]
    reserved = http.post(f"{base}/ticket/v1/reserve", headers={**auth, "Idempotency-Key": f"reserve-{i}"},
                         json={"offers": [{"offerId": offer["offerId"], "count": 1}], "paymentType": 2})
    if reserved.status_code != 201:
        return uid, None, None, f"reserve answered {reserved.status_code}: {reserved.text}"
    order = reserved.json()

    def reservation_open():
        listed = http.get(f"{base}/ticket/v1/reservations", headers=auth).json()["reservations"]
        return order["orderId"] in [r["orderId"] for r in listed]

    # The app shows the reservation as soon as the store holds it.
    if not wait_for(reservation_open):
        return uid, None, order["orderId"], "the reservation never appeared"
    page = http.get(order["url"])
    if page.status_code != 200 or "Pay" not in page.text:
        return uid, None, order["orderId"], f"the terminal answered {page.status_code}"
    outcome = ["cancel", "reject", "pay", "pay"][i % 4]
    token = order["url"].split("t=")[1]
    pressed = http.post(f"{base}/ticket/v1/terminal/{order['orderId']}/{outcome}?t={token}", allow_redirects=False)
    if pressed.status_code != 303:
        return uid, outcome, order["orderId"], f"the terminal's {outcome} answered {pressed.status_code}"
    back = http.get(pressed.headers["Location"], allow_redirects=False)
    status = {"pay": "CAPTURE", "cancel": "CANCEL", "reject": "REJECT"}[outcome]
    if back.status_code != 302 or not back.headers["Location"].startswith("atb://payment-return?") or status not in back.headers["Location"]:
        return uid, outcome, order["orderId"], f"the callback answered {back.status_code} {back.headers.get('Location')}"
    if outcome in ("pay", "cancel"):
        # A capture's reservation goes when the fare contract is stored, a cancelled one at once.
        if not wait_for(lambda: not reservation_open()):
            return uid, outcome, order["orderId"], "the reservation stayed"
    if outcome == "pay":
        state = http.get(f"{base}/ticket/v1/orders/{order['orderId']}", headers=auth).json()["state"]
        if state != "captured":
            return uid, outcome, order["orderId"], f"the order is {state}, not captured"
    return uid, outcome, order["orderId"], None


def wait_for(condition, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


started = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(max_workers=users) as pool:
    results = list(pool.map(flow, range(users)))
failures = [r for r in results if r[3]]
for uid, outcome, order, problem in failures:
    print(f"FAIL {uid} {outcome} {order}: {problem}")
counts = {o: sum(1 for r in results if r[1] == o) for o in ("pay", "cancel", "reject")}
print(f"seed flow: {users} users in {time.monotonic() - started:.1f} s: {counts['pay']} paid, {counts['cancel']} cancelled, "
      f"{counts['reject']} declined, {len(failures)} failed")
with open(sys.argv[3] if len(sys.argv) > 3 else "/dev/null", "w") as out:
    for uid, outcome, order, _ in results:
        out.write(f"{uid} {outcome} {order}\n")
sys.exit(1 if failures else 0)
