"""Checks what the app was told against the recorded topics and the store's export, after a run
whose server was killed: every user whose sign-up answered 200 was published (auth-users) and has
its claims in the store; every order that answered 201 (or 200, a replayed reserve) was published
(reservations) and has the documents its payment events call for; every payment callback that
answered was published.

For an order, the payment event on the topic decides its documents: CAPTURE, a fare contract
published and stored and no reservation; CANCEL, neither; REJECT, the reservation kept with
paymentStatus REJECT; none, the reservation as reserved.

Usage: python3 crash_outcomes.py RESULTS EXPORT RECORDED.jsonl…
"""
import json
import sys

results, export, recorded = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [line.split() for line in open(results) if line.strip()]
documents = {}
for line in open(export):
    entry = json.loads(line)
    documents[entry["path"]] = entry["data"]
events = {}
for path in recorded:
    for line in open(path):
        message = json.loads(line)
        event = json.loads(message["payload"])
        events.setdefault(event["id"], (message["topic"], event))
if not rows or not documents or not events:
    print(f"refusing empty input: {len(rows)} results, {len(documents)} documents, {len(events)} events")
    sys.exit(1)

failures = []
users = [r[1] for r in rows if r[0] == "user"]
orders = {r[2]: r[1] for r in rows if r[0] == "order"}
payments = [(r[1], r[2], r[3]) for r in rows if r[0] == "payment"]
for uid in users:
    published = events.get(f"user-created-{uid}")
    if not published or published[0] != "auth-users":
        failures.append(f"user {uid}: no user-created event on auth-users")
    claims = (documents.get(f"authUsers/{uid}") or {}).get("customClaims") or {}
    if "abt_id" not in claims or "customer_number" not in claims:
        failures.append(f"user {uid}: authUsers/{uid} has no claims ({claims})")
for order, uid in orders.items():
    published = events.get(f"reservation-created-{order}")
    if not published or published[0] != "reservations":
        failures.append(f"order {order}: no reservation-created event on reservations")
        continue
    statuses = [s for s in ("CAPTURE", "CANCEL", "REJECT") if f"payment-{order}-{s}" in events]
    reservation = documents.get(f"customers/{uid}/reservations/{order}")
    contract = documents.get(f"customers/{uid}/fareContracts/ATB:FareContract:{order}")
    if len(statuses) > 1:
        failures.append(f"order {order}: payments {statuses} both published")
    elif statuses == ["CAPTURE"]:
        if not any(t == "fare-contracts" and e["data"].get("orderId") == order for t, e in events.values()):
            failures.append(f"order {order}: captured, and no fare contract published")
        if contract is None or reservation is not None:
            failures.append(f"order {order}: captured: contract {contract is not None}, reservation {reservation is not None}")
    elif statuses == ["CANCEL"]:
        if contract is not None or reservation is not None:
            failures.append(f"order {order}: cancelled: contract {contract is not None}, reservation {reservation is not None}")
    elif statuses == ["REJECT"]:
        if reservation is None or reservation.get("paymentStatus") != "REJECT" or contract is not None:
            failures.append(f"order {order}: declined: reservation {reservation}, contract {contract is not None}")
    elif reservation is None or contract is not None:
        failures.append(f"order {order}: not paid: reservation {reservation is not None}, contract {contract is not None}")
for uid, order, status in payments:
    if f"payment-{order}-{status}" not in events:
        failures.append(f"payment {order} {status}: answered, not published")
    if orders.get(order) != uid:
        failures.append(f"payment {order}: its reserve's answer was not recorded")

for failure in failures[:30]:
    print("FAIL", failure)
print(f"crash outcomes: {len(users)} users, {len(orders)} orders, {len(payments)} payments answered; "
      f"{len(events)} events recorded, {len(documents)} documents; {len(failures)} failures")
sys.exit(1 if failures else 0)
