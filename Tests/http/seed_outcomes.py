"""Checks the store's export after seed_flow.py against docs/reference.md#triggers (the reservations): a paid order has its fare
contract and no reservation; a cancelled one neither; a declined one keeps its reservation with
paymentStatus REJECT.

Usage: python3 seed_outcomes.py RESULTS EXPORT
"""
import json
import sys

documents = {}
with open(sys.argv[2]) as export:
    for line in export:
        entry = json.loads(line)
        documents[entry["path"]] = entry["data"]
failures = 0
rows = [line.split() for line in open(sys.argv[1])]
if not rows:
    sys.exit(f"no users in {sys.argv[1]}: nothing to check")
if not documents:
    sys.exit(f"no documents in {sys.argv[2]}")
for uid, outcome, order in rows:
    contract = documents.get(f"customers/{uid}/fareContracts/ATB:FareContract:{order}")
    reservation = documents.get(f"customers/{uid}/reservations/{order}")
    expected = {
        "pay": contract is not None and contract["orderId"] == order and reservation is None,
        "cancel": contract is None and reservation is None,
        "reject": contract is None and reservation is not None and reservation.get("paymentStatus") == "REJECT",
    }[outcome]
    if not expected:
        failures += 1
        print(f"FAIL {uid} {outcome} {order}: contract {contract is not None}, reservation {reservation}")
print(f"seed outcomes: {len(rows) - failures} of {len(rows)} users' documents follow the reservation rules")
sys.exit(1 if failures else 0)
