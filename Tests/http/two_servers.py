"""Two `faresync serve` processes on one PostgreSQL store, as behind a load balancer: a user signs
up at one and is provisioned; ten reserves with one Idempotency-Key and one body, spread over both
servers at once, make one order and publish one reservation; the same key with another body is a
422 at either server; sign-ups at both servers at once each publish their user once.

Usage: python3 two_servers.py FARESYNC STORE_URL WORKDIR   (inside Tests/lib/with_postgres.sh)
"""
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time

import requests

faresync, store, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def start(name):
    port = free_port()
    log = open(f"{workdir}/{name}.log", "w")
    process = subprocess.Popen([faresync, "serve", "--http-port", str(port), "--store", store, "--bcrypt-cost", "4",
                                "--issue-delay", "0", "--sweep-interval", "1"], stderr=log, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                return process, base
        except requests.ConnectionError:
            time.sleep(0.1)
    raise SystemExit(f"{name} did not start: " + open(f"{workdir}/{name}.log").read())


def provisioned_token(base, refresh_token):
    for _ in range(100):
        answer = requests.post(f"{base}/securetoken.googleapis.com/v1/token",
                               data={"grant_type": "refresh_token", "refresh_token": refresh_token}).json()
        token = answer.get("id_token", "")
        claims = json.loads(__import__("base64").urlsafe_b64decode(token.split(".")[1] + "==="))
        if "abt_id" in claims:
            return token
        time.sleep(0.1)
    raise SystemExit("the user was never provisioned")


servers = []
try:
    os.makedirs(workdir, exist_ok=True)
    # The first server creates the schema and the signing key; the second starts on them.
    servers.append(start("a"))
    servers.append(start("b"))
    (_, a), (_, b) = servers
    session = requests.post(f"{a}/identitytoolkit.googleapis.com/v1/accounts:signUp", json={}).json()
    check("idToken" in session, "a user signs up at server a")
    token = provisioned_token(b, session["refreshToken"])
    check(bool(token), "server b refreshes its token with the claims")
    headers = {"Authorization": "Bearer " + token, "Idempotency-Key": "one-key"}
    offer = requests.post(f"{b}/ticket/v1/search", headers=headers, json={
        "products": ["ATB:PreassignedFareProduct:8808c360"], "travellers": [{"id": "t", "userType": "ADULT", "count": 1}],
        "zones": ["ATB:TariffZone:1"]}).json()["offers"][0]["offerId"]
    body = {"offers": [{"offerId": offer, "count": 1}], "paymentType": 1}
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda i: requests.post(f"{(a, b)[i % 2]}/ticket/v1/reserve", headers=headers, json=body), range(10)))
    statuses = sorted(answer.status_code for answer in answers)
    orders = {answer.json().get("orderId") for answer in answers if answer.status_code in (200, 201)}
    check(statuses.count(201) == 1 and statuses.count(200) == 9, f"ten reserves with one key over both servers: one 201, nine 200 ({statuses})")
    check(len(orders) == 1, f"they answer one order ({len(orders)})")
    for base in (a, b):
        other = requests.post(f"{base}/ticket/v1/reserve", headers=headers, json={**body, "offers": [{"offerId": offer, "count": 2}]})
        check(other.status_code == 422, f"the key with another body at {base}: {other.status_code}")
    listed = requests.get(f"{a}/ticket/v1/reservations", headers={"Authorization": "Bearer " + token}).json()["reservations"]
    check([r.get("orderId") for r in listed] == list(orders), f"one reservation was written ({len(listed)})")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        signups = list(pool.map(lambda i: requests.post(f"{(a, b)[i % 2]}/identitytoolkit.googleapis.com/v1/accounts:signUp", json={}), range(16)))
    check(all(s.status_code == 200 for s in signups), f"16 sign-ups at both servers at once ({sorted(s.status_code for s in signups)})")
finally:
    for process, _ in servers:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)

export = subprocess.run([faresync, "export", "--store", store], capture_output=True, text=True, check=True).stdout.splitlines()
users = [line for line in export if json.loads(line)["path"].startswith("authUsers/")]
reservations = [line for line in export if "/reservations/" in json.loads(line)["path"]]
check(len(users) == 17, f"17 users provisioned, each once ({len(users)} authUsers documents)")
check(len(reservations) == 1, f"one reservation document ({len(reservations)})")
for name in ("a", "b"):
    errors = [line for line in open(f"{workdir}/{name}.log") if "answered 5" in line]
    check(not errors, f"server {name} answered no 5xx ({len(errors)})")
if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("two servers: all checks passed")
