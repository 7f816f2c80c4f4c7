"""The <topic>.DLT messages kcat read equal the store's dead letters with a topic, once each,
with their headers. Usage: dlt_matches_store.py STORE.export DLT.jsonl"""
import json, sys
letters = [json.loads(l)["data"] for l in open(sys.argv[1]) if json.loads(l)["path"].startswith("deadLetters/")]
expected = sorted((d["topic"], str(d["firstSeen"]["partition"]), str(d["firstSeen"]["offset"]), d["reason"], d["error"], d["key"], d["payload"])
                  for d in letters if d["topic"])
got = []
for line in open(sys.argv[2]):
    m = json.loads(line)
    h = dict(zip(m["headers"][::2], m["headers"][1::2]))
    got.append((h["faresync-dlt-original-topic"], h["faresync-dlt-original-partition"], h["faresync-dlt-original-offset"],
                h["faresync-dlt-reason"], h["faresync-dlt-error"], m["key"], m["payload"]))
    if m["topic"] != h["faresync-dlt-original-topic"] + ".DLT":
        sys.exit(f"a message on {m['topic']} names {h['faresync-dlt-original-topic']} as its original topic")
print(f"{len(got)} DLT messages, {len(expected)} dead letters with a topic in the store")
sys.exit(0 if expected and sorted(got) == expected else 1)
