"""The app's seed flow, looped by many users at once until a deadline, against a server that may
be killed and restarted at any moment: anonymous sign-up, refresh until the claims appear, then
orders one after another (search, reserve with an Idempotency-Key, open the terminal, pay, cancel
or decline, follow the callback). A user now and then starts over with a new account, as an app
reinstalled does, so that sign-ups happen all along the run.

A request that fails to connect, or whose connection breaks, is tried again (the same request:
a reserve keeps its Idempotency-Key, a callback its URL) until the server answers or the step's
patience runs out; then the user abandons that order (or account) and goes on. Only what the
server answered as done is written to RESULTS, one line each, as it happens:

    user UID                   sign-up answered 200
    order UID ORDER 201|200    reserve answered 201 (or 200, a replay of a reserve whose answer was lost)
    payment UID ORDER STATUS   the payment callback answered its 302 (STATUS: CAPTURE, CANCEL, REJECT)

Every HTTP status the server answered is counted; the counts go to STATUSES as JSON at the end.
It exits 1 when any answer was a 5xx, or when no user ever got an order through.

Usage: python3 crash_flow.py BASE_URL USERS SECONDS RESULTS STATUSES [SEED [NEW_ACCOUNT_SHARE [THINK_SECONDS [retry-unavailable]]]]
  NEW_ACCOUNT_SHARE: the share of orders a new account comes before (default 0.1);
  THINK_SECONDS: the mean pause between a user's orders (default 0);
  retry-unavailable: a 503 (the server cut off from its store) is tried again like a broken
  connection, and is not a failure; any other 5xx still is.
"""
import base64
import collections
import json
import random
import sys
import threading
import time

import requests

PRODUCT = "ATB:PreassignedFareProduct:8808c360"
OUTCOMES = {"pay": "CAPTURE", "cancel": "CANCEL", "reject": "REJECT"}


class Gone(Exception):
    """The step's patience ran out: the server did not answer, or answered something unusable."""


class Recorder:
    """Writes result lines and counts statuses, shared by the users' threads."""

    def __init__(self, path):
        self.out = open(path, "w")
        self.lock = threading.Lock()
        self.statuses = collections.Counter()
        self.connection_errors = 0
        self.problems = []

    def line(self, *fields):
        with self.lock:
            self.out.write(" ".join(fields) + "\n")
            self.out.flush()

    def status(self, code):
        with self.lock:
            self.statuses[str(code)] += 1

    def broken(self):
        with self.lock:
            self.connection_errors += 1

    def problem(self, text):
        with self.lock:
            self.problems.append(text)


class App:
    """One user's app: a session, its tokens, and the loop of orders."""

    def __init__(self, base, index, recorder, deadline, patience, rng, new_accounts=0.1, think=0.0, retry_unavailable=False):
        self.base = base
        self.index = index
        self.recorder = recorder
        self.deadline = deadline
        self.patience = patience
        self.rng = rng
        self.http = requests.Session()
        self.identity = f"{base}/identitytoolkit.googleapis.com/v1"
        self.orders = 0
        self.new_accounts = new_accounts
        self.think = think
        self.retry_unavailable = retry_unavailable

    def call(self, method, url, ok, **kwargs):
        """The request, tried again while the connection fails or the answer is not in `ok`
        (a throttle, the claims not there yet), until the step's patience runs out."""
        give_up = min(time.monotonic() + self.patience, self.deadline + self.patience)
        pause = 0.1
        last = None
        while True:
            try:
                answer = self.http.request(method, url, timeout=10, allow_redirects=False, **kwargs)
            except requests.RequestException as error:
                self.recorder.broken()
                self.http = requests.Session()  # a connection to a killed server is gone for good
                last = f"{type(error).__name__}"
            else:
                self.recorder.status(answer.status_code)
                if answer.status_code >= 500 and not (answer.status_code == 503 and self.retry_unavailable):
                    self.recorder.problem(f"{method} {url.split('?')[0]} answered {answer.status_code}: {answer.text[:200]}")
                if answer.status_code in ok:
                    return answer
                last = f"{answer.status_code} {answer.text[:200]}"
            if time.monotonic() > give_up:
                raise Gone(f"{method} {url.split('?')[0]}: {last}")
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def sign_up(self):
        session = self.call("POST", f"{self.identity}/accounts:signUp?key=fake", {200}, json={"returnSecureToken": True}).json()
        self.uid, self.id_token, self.refresh_token = session["localId"], session["idToken"], session["refreshToken"]
        self.recorder.line("user", self.uid)
        # The claims come from the worker's user-created trigger; the app refreshes until they do.
        give_up = time.monotonic() + self.patience
        while not self.has_claims():
            if time.monotonic() > give_up:
                raise Gone(f"the claims of {self.uid} never appeared")
            time.sleep(0.3)
            refreshed = self.call("POST", f"{self.base}/securetoken.googleapis.com/v1/token?key=fake", {200},
                                  data={"grant_type": "refresh_token", "refresh_token": self.refresh_token}).json()
            self.id_token = refreshed["id_token"]

    def has_claims(self):
        claims = json.loads(base64.urlsafe_b64decode(self.id_token.split(".")[1] + "==="))
        return "customer_number" in claims and "abt_id" in claims

    def order(self):
        auth = {"Authorization": f"Bearer {self.id_token}"}
        offers = self.call("POST", f"{self.base}/ticket/v1/search", {200}, headers=auth, json={
            "products": [PRODUCT], "travellers": [{"id": "me", "userType": "ADULT", "count": 1}], "zones": ["ATB:TariffZone:1"]})
        offer = offers.json()["offers"][0]
        self.orders += 1
        key = f"reserve-{self.uid}-{self.orders}"
        reserved = self.call("POST", f"{self.base}/ticket/v1/reserve", {200, 201}, headers={**auth, "Idempotency-Key": key},
                             json={"offers": [{"offerId": offer["offerId"], "count": 1}], "paymentType": 2})
        order = reserved.json()
        self.recorder.line("order", self.uid, order["orderId"], str(reserved.status_code))
        if "url" not in order:
            raise Gone(f"the order {order['orderId']} has no terminal (state {order.get('state')})")
        page = self.call("GET", order["url"], {200})
        if "Pay" not in page.text:
            raise Gone(f"the terminal of {order['orderId']} shows no Pay button")
        outcome = self.rng.choice(["cancel", "reject", "pay", "pay"])
        token = order["url"].split("t=")[1]
        # A press whose answer was lost is pressed again; its second answer names the same callback
        # (or, once the callback went through, a 409 that ends the order here).
        pressed = self.call("POST", f"{self.base}/ticket/v1/terminal/{order['orderId']}/{outcome}?t={token}", {303, 409})
        if pressed.status_code == 409:
            return
        back = self.call("GET", pressed.headers["Location"], {302})
        status = OUTCOMES[outcome]
        if status not in back.headers["Location"]:
            raise Gone(f"the callback of {order['orderId']} answered {back.headers['Location']}")
        self.recorder.line("payment", self.uid, order["orderId"], status)

    def run(self):
        """Orders until the deadline; a new account first, and now and then again."""
        signed_up = False
        while time.monotonic() < self.deadline:
            try:
                if not signed_up or self.rng.random() < self.new_accounts:
                    signed_up = False
                    self.sign_up()
                    signed_up = True
                self.order()
                if self.think:
                    time.sleep(self.rng.uniform(0, 2 * self.think))
            except Gone as gone:
                self.recorder.problem(f"user {self.index}: gave up: {gone}")
            except (KeyError, ValueError) as error:
                self.recorder.problem(f"user {self.index}: unexpected answer: {error!r}")


def main():
    base, users, seconds, results, statuses = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
    seed = int(sys.argv[6]) if len(sys.argv) > 6 else 7
    new_accounts = float(sys.argv[7]) if len(sys.argv) > 7 else 0.1
    think = float(sys.argv[8]) if len(sys.argv) > 8 else 0.0
    retry_unavailable = len(sys.argv) > 9 and sys.argv[9] == "retry-unavailable"
    recorder = Recorder(results)
    started = time.monotonic()
    deadline = started + seconds
    apps = [App(base, i, recorder, deadline, 30.0, random.Random(seed * 1000 + i), new_accounts, think, retry_unavailable)
            for i in range(users)]
    threads = [threading.Thread(target=app.run) for app in apps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = collections.Counter(line.split()[0] for line in open(results))
    with open(statuses, "w") as out:
        json.dump({"statuses": dict(recorder.statuses), "connection_errors": recorder.connection_errors,
                   "problems": recorder.problems, "results": dict(lines)}, out)
    for problem in recorder.problems[:20]:
        print(problem)
    server_errors = sum(n for code, n in recorder.statuses.items() if code.startswith("5") and not (code == "503" and retry_unavailable))
    print(f"app loop: {users} users for {time.monotonic() - started:.0f} s: {lines['user']} sign-ups, {lines['order']} orders, "
          f"{lines['payment']} payments answered; statuses {dict(sorted(recorder.statuses.items()))}, "
          f"{recorder.connection_errors} connection errors, {len(recorder.problems)} steps given up, {server_errors} 5xx")
    sys.exit(1 if server_errors or lines["order"] == 0 else 0)


if __name__ == "__main__":
    main()
