"""Two logs that leave a store with a park-timeout dead letter whose account exists by now, as a
worker that ran ahead would: FIRST holds a fare contract and another user's creation 30 hours
later (the sweep at its end times the parked contract out), SECOND the contract's user, created
in time by event time. Cut from `faresync simulate`.

Usage: python3 park_timeout_logs.py FARESYNC FIRST SECOND
"""
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

faresync, first, second = sys.argv[1:4]
lines = [json.loads(line) for line in subprocess.run(
    [faresync, "simulate", "--users", "6", "--seed", "11"], check=True, capture_output=True, text=True).stdout.splitlines()]
events = [(line, json.loads(line["payload"])) for line in lines]
contract_line, contract = next((l, e) for l, e in events if l["topic"] == "fare-contracts")
account = contract["data"]["customerAccountId"]
uid = next(e["data"]["customerId"] for l, e in events
           if l["topic"] == "reservations" and e["data"].get("customerAccountId") == account)
user_line = next(l for l, e in events if l["topic"] == "auth-users" and e["data"]["uid"] == uid)
filler_line, filler = next((l, e) for l, e in events if l["topic"] == "auth-users" and e["data"]["uid"] != uid)
later = datetime.fromisoformat(contract["time"].replace("Z", "+00:00")) + timedelta(hours=30)
filler["time"] = later.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
filler_line = dict(filler_line, payload=json.dumps(filler), ts=int(later.timestamp() * 1000))
with open(first, "w") as out:
    for line in (contract_line, filler_line):
        out.write(json.dumps(line) + "\n")
with open(second, "w") as out:
    out.write(json.dumps(user_line) + "\n")
print(f"park-timeout logs: contract {contract['data']['id']} of {account} (user {uid})")
