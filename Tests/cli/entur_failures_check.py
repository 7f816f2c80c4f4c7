"""With Entur failing transiently, every user ends as without failures, or, only when its
retries ran out, as a dead letter. Usage: entur_failures_check.py CLEAN.export FLAKY.export"""
import json, sys
def load(path):
    return {d["path"]: d["data"] for d in map(json.loads, open(path, encoding="utf-8"))}
clean, flaky = load(sys.argv[1]), load(sys.argv[2])
dead = {d["key"] for p, d in flaky.items() if p.startswith("deadLetters/") and d["reason"] == "entur-unavailable"}
users = [p.split("/")[1] for p in clean if p.startswith("authUsers/")]
same = sum(1 for u in users if flaky.get("authUsers/" + u) == clean["authUsers/" + u] and flaky.get("customers/" + u) == clean["customers/" + u])
lost = [u for u in users if "authUsers/" + u not in flaky]
wrong = [u for u in users if "authUsers/" + u in flaky and flaky["authUsers/" + u] != clean["authUsers/" + u]]
undead = [u for u in lost if u not in dead]
print("     entur failures: %d users unchanged, %d dead-lettered (entur-unavailable), %d changed, %d missing without a dead letter" % (same, len(lost), len(wrong), len(undead)))
sys.exit(0 if same + len(lost) == len(users) and not wrong and not undead and lost else 1)
