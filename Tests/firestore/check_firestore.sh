#!/usr/bin/env bash
# The Firestore mirror against the real Cloud Firestore emulator (with the shipped firestore.rules),
# checked with Google's own Python client: the demo mirrored and verified, the app's five listeners,
# the security rules, documents the emulator refuses, an emulator restarted empty, (with a dev
# broker) the live worker, a replay during the emulator's faults, and the HTTP services' seed flow.
# check_firestore_workers.sh checks the killed workers, with an emulator of its own.
#
# usage: check_firestore.sh FARESYNC
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/emulator.sh" "$1"

# 1. The demo, mirrored as it runs; then compared document by document.
"$FARESYNC" demo --store "sqlite:$WORK/demo.sqlite" > demo.out 2> demo.err
if grep -q "^mirrored to 127.0.0.1:$PORT/$PROJECT: [0-9]* documents written" demo.out; then pass "demo --firestore mirrors (FIRESTORE_EMULATOR_HOST)"; else fail "demo mirrors"; cat demo.out demo.err; fi
check "mirror --verify after demo: no difference" "$FARESYNC" mirror --store "sqlite:$WORK/demo.sqlite" --verify
"$FARESYNC" export --store "sqlite:$WORK/demo.sqlite" --out demo.jsonl

# 2. The app's five listeners (Google's Python client, on_snapshot) see what the export holds.
check "the app's listeners see the export, timestamps typed" python3 "$HERE/app_listeners.py" demo.jsonl "$PROJECT" 5
grep "app listeners:" "$WORK/last.log" | sed 's/^/     /'

# 3. The shipped rules, with unsigned ID tokens of two users.
check "firestore.rules: own documents only, no writes" python3 "$HERE/rules_check.py" demo.jsonl "$PROJECT"
grep "rules:" "$WORK/last.log" | sed 's/^/     /'

# 4. A difference is found: a document changed behind the mirror's back.
victim=$(python3 -c 'import json,sys; print(next(json.loads(l)["path"] for l in open(sys.argv[1]) if "/fareContracts/" in l))' demo.jsonl)
python3 - "$victim" <<'EOF'
import os, sys
from google.cloud import firestore
db = firestore.Client(project="demo-faresync")
db.document(sys.argv[1]).update({"state": 99})
EOF
set +e
"$FARESYNC" mirror --store "sqlite:$WORK/demo.sqlite" --verify > verify.out 2>&1
status=$?
set -e
if [ "$status" = 1 ] && grep -q "^differs  $victim: state: store [0-9]* (integer), firestore 99 (integer)" verify.out && [ "$(grep -c '^differs\|^missing\|^extra' verify.out)" = 1 ]; then
  pass "mirror --verify names a changed field (exit 1)"
else
  fail "mirror --verify names a changed field (status $status)"; cat verify.out
fi

# 5. The emulator restarted empty: the mirror notices and fills it again.
stop_emulator
start_emulator
check "mirror fills an emulator that restarted empty" "$FARESYNC" mirror --store "sqlite:$WORK/demo.sqlite"
check "mirror --verify after the refill" "$FARESYNC" mirror --store "sqlite:$WORK/demo.sqlite" --verify

# 6. Documents the emulator refuses for good are recorded, listed by --verify, and the rest goes on.
#    They sit among 2400 others, so that the commit refused is one of two in flight.
python3 - > refused.jsonl <<'EOF'
import hashlib, json
def line(topic, key, event, offset):
    return json.dumps({"topic": topic, "partition": 0, "offset": offset, "key": key, "payload": json.dumps(event)})
uid = "refusal-user"
abt = "ATB:CustomerAccount:" + hashlib.sha256(uid.encode()).hexdigest()[:16]
def contract(cid, extra):
    data = {"id": cid, "version": "1", "created": "2026-11-20T10:00:00Z", "orderId": "o-" + cid, "customerAccountId": abt,
            "state": 1, "paymentType": ["VISA"], "totalAmount": "10.00", "totalTaxAmount": "1.00",
            "travelRights": [{"id": "tr", "status": 4, "fareProductRef": "p", "startDateTime": "2026-11-20T10:00:00Z",
                              "endDateTime": "2026-11-20T11:00:00Z", "authorityRef": "ATB:Authority:2"}], **extra}
    return {"specversion": "1.0", "id": "evt-" + cid, "source": "//entur/abt", "type": "abt.farecontract.changed",
            "time": "2026-11-20T10:00:01Z", "datacontenttype": "application/json", "data": data}
user = {"specversion": "1.0", "id": "evt-user", "source": "//firebase/auth", "type": "auth.user.created",
        "time": "2026-11-20T09:00:00Z", "datacontenttype": "application/json",
        "data": {"uid": uid, "isAnonymous": True, "createdAt": "2026-11-20T09:00:00Z"}}
print(line("auth-users", uid, user, 0))
for i in range(1200):
    print(line("fare-contracts", abt, contract("ok-%d" % i, {}), i))
print(line("fare-contracts", abt, contract("reserved-name", {"__reserved__": 1}), 1200))
print(line("fare-contracts", abt, contract("nested-array", {"matrix": [[1, 2], [3]]}), 1201))
for i in range(1200, 2400):
    print(line("fare-contracts", abt, contract("ok-%d" % i, {}), i + 2))
EOF
"$FARESYNC" replay refused.jsonl --store "sqlite:$WORK/refused.sqlite" > refused.out 2>&1 || { fail "replay with refused documents"; cat refused.out; }
set +e
"$FARESYNC" mirror --store "sqlite:$WORK/refused.sqlite" --verify > verify.out 2>&1
status=$?
set -e
if grep -q "2 documents refused by the emulator" refused.out && [ "$status" = 1 ] \
   && grep -q "^refused  customers/refusal-user/fareContracts/reserved-name: .*reserved" verify.out \
   && grep -q "^refused  customers/refusal-user/fareContracts/nested-array: .*array" verify.out \
   && [ "$(grep -c '^differs\|^missing\|^extra\|^refused' verify.out)" = 2 ]; then
  pass "refused documents are recorded with the emulator's error; the others are mirrored"
else
  fail "refused documents (verify status $status)"; cat refused.out verify.out
fi

# 7. Live: a worker with --firestore consumes traffic produced as it runs, while a listener watches
#    one user's fare contracts and reservations. The log is produced in two parts: up to the
#    user's contract, then, once the worker has committed the reservation, the rest. So the
#    reservation and its contract never share one of the worker's batches, however loaded the
#    machine, and the listener must see the reservation come and go.
"$FARESYNC" dev-broker --bootstrap-file boot.txt > broker.out 2> broker.err &
BROKER_PID=$!
for _ in $(seq 100); do [ -s boot.txt ] && break; sleep 0.1; done
"$FARESYNC" simulate --users 100 --seed 33 --out live.jsonl 2> /dev/null
read -r uid order contract gap line < <(python3 "$HERE/live_listener.py" pick live.jsonl)
head -n "$((line - 1))" live.jsonl > live-before.jsonl
tail -n "+$line" live.jsonl > live-after.jsonl
python3 "$HERE/live_listener.py" watch "$WORK/live.sqlite" "$PROJECT" "$uid" "$order" "$contract" > live.out 2>&1 &
LISTENER=$!
for _ in $(seq 300); do grep -q listening live.out && break; sleep 0.1; done
HTTP=$(free_port)
"$FARESYNC" run --brokers @boot.txt --group live --store "sqlite:$WORK/live.sqlite" --sweep-interval 1 --log-level warning \
  --http-port "$HTTP" --kafka-setting session.timeout.ms=6000 --kafka-setting heartbeat.interval.ms=500 \
  --kafka-setting fetch.wait.max.ms=50 2> live-run.err &
RUN=$!
wait_url 30 "http://127.0.0.1:$HTTP/readyz" || true # the listener's checks fail on a worker not ready
"$FARESYNC" replay live-before.jsonl --brokers @boot.txt > /dev/null 2>&1
python3 "$HERE/live_listener.py" stored "$WORK/live.sqlite" "customers/$uid/reservations/$order" || true # the listener tells
"$FARESYNC" replay live-after.jsonl --brokers @boot.txt > /dev/null 2>&1
if wait "$LISTENER"; then pass "live ($gap messages between the two): reservation, then contract and the reservation gone, each within 2 s of its commit"
else fail "live listener"; fi
sed 's/^/     /' live.out
kill -TERM "$RUN"; wait "$RUN" 2> /dev/null || true
check "mirror --verify after the live run (caught up by 'mirror')" bash -c "'$FARESYNC' mirror --store 'sqlite:$WORK/live.sqlite' > /dev/null && '$FARESYNC' mirror --store 'sqlite:$WORK/live.sqlite' --verify"
kill "$BROKER_PID" 2> /dev/null || true
wait "$BROKER_PID" 2> /dev/null || true
BROKER_PID=

# 8. A 100 k-event replay mirrored while the emulator stops answering for 10 s (SIGSTOP), then is
#    killed and restarted empty: the replay exits 0 once the mirror caught up, and nothing differs.
"$FARESYNC" simulate --users 15000 --seed 41 --out big.jsonl 2> /dev/null
events=$(wc -l < big.jsonl)
# The earlier stores' mirrors go first: the position read below is this replay's only.
curl -fs -X DELETE "http://127.0.0.1:$PORT/emulator/v1/projects/$PROJECT/databases/(default)/documents" > /dev/null
"$FARESYNC" replay big.jsonl --store "sqlite:$WORK/big.sqlite" > big.out 2> big.err &
REPLAY=$!
# The faults count only when they land on a mirror that moves, inside a replay still running.
faults=
if ! wait_for_position_above 0; then faults="the mirror never passed position 0 within 60 s"
elif ! kill -0 "$REPLAY" 2> /dev/null; then faults="the replay ended before the emulator stopped"
else
  kill -STOP -- -"$EMULATOR_PID"
  sleep 10
  kill -CONT -- -"$EMULATOR_PID"
  if ! wait_for_position_above 5000; then faults="the mirror did not pass position 5000 within 60 s of the emulator's SIGCONT"
  elif ! kill -0 "$REPLAY" 2> /dev/null; then faults="the replay ended before the emulator restarted"
  else
    restarted_at=$(mirror_position)
    stop_emulator
    sleep 1
    start_emulator
  fi
fi
if [ -n "$faults" ]; then
  fail "the emulator's faults inside the replay of $events events: $faults"
  wait "$REPLAY" || true
elif wait "$REPLAY"; then pass "replay of $events events with --firestore exits 0 (emulator stopped 10 s, then restarted empty at position $restarted_at)"
else fail "replay of $events events with --firestore"; tail -5 big.err; fi
grep "^mirrored to" big.out | sed 's/^/     /'
check "mirror --verify after the 100 k-event replay and the emulator's faults" "$FARESYNC" mirror --store "sqlite:$WORK/big.sqlite" --verify

# 9. The seed flow over HTTP with serve mirroring: what the app's users did reaches the emulator.
HTTP_PORT=$(free_port)
setsid "$FARESYNC" serve --http-port "$HTTP_PORT" --store "sqlite:$WORK/served.sqlite" --bcrypt-cost 4 --issue-delay 0.2 \
  > served.out 2> served.err &
SERVE_PID=$!
wait_url 10 "http://127.0.0.1:$HTTP_PORT/healthz" || true # the seed flow's check fails on a server not up
check "the seed flow for 10 users against serve --firestore" python3 "$REPO/Tests/http/seed_flow.py" "http://127.0.0.1:$HTTP_PORT" 10 outcomes.txt
kill -TERM -- "-$SERVE_PID" 2> /dev/null; wait "$SERVE_PID" 2> /dev/null || true
check "mirror --verify after the served flow (caught up by 'mirror')" bash -c "'$FARESYNC' mirror --store 'sqlite:$WORK/served.sqlite' > /dev/null && '$FARESYNC' mirror --store 'sqlite:$WORK/served.sqlite' --verify"

echo "firestore: $passed passed, $failed failed"
[ "$failed" = 0 ]
