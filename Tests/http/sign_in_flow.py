"""Every way into the seed flow, as the Firebase JS SDK calls the REST paths, with Python `requests`:
an anonymous user buys a ticket, verifies a phone number (the code read from the emulator's
verificationCodes list) and links it; a "second device" signs in with the same number and sees the
same uid, claims and order. Google and Apple sign in twice with one provider user each and get one
uid each; a custom token signs in its uid; the OAuth provider's code flow with PKCE (S256) ends in a
Firebase session, and refuses a missing or wrong verifier, a reused code, an unregistered redirect.
The published log then holds one `auth.user.created` per user, none for a sign-in of a known user
or a link. The server runs with `--oauth-provider --oauth-redirect-uri http://127.0.0.1/callback`.

Usage: python3 sign_in_flow.py BASE_URL PUBLISHED_LOG UID_FILE
"""
import base64
import hashlib
import json
import secrets
import sys
import time

import requests

base, log_path, uid_file = sys.argv[1], sys.argv[2], sys.argv[3]
IDENTITY = f"{base}/identitytoolkit.googleapis.com/v1"
PRODUCT = "ATB:PreassignedFareProduct:8808c360"
NUMBER = "+4798765432"
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def call(path, body):
    return requests.post(f"{IDENTITY}/{path}?key=fake", json=body)


def claims(id_token):
    return json.loads(base64.urlsafe_b64decode(id_token.split(".")[1] + "==="))


def unsigned(payload):
    part = lambda value: base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return part({"alg": "none", "typ": "JWT"}) + "." + part(payload) + "."


def with_claims(session):
    """The app refreshes until the ID token carries the claims the user-created trigger sets."""
    token = session["idToken"]
    for _ in range(40):
        if "abt_id" in claims(token):
            return token
        time.sleep(0.1)
        token = requests.post(f"{base}/securetoken.googleapis.com/v1/token?key=fake",
                              data={"grant_type": "refresh_token", "refresh_token": session["refreshToken"]}).json()["id_token"]
    return token


def verify_phone(id_token=None):
    """sendVerificationCode, the code from the emulator's list, signInWithPhoneNumber (linking with id_token)."""
    sent = call("accounts:sendVerificationCode", {"phoneNumber": NUMBER, "recaptchaToken": "ignored"}).json()
    codes = requests.get(f"{base}/emulator/v1/projects/demo-faresync/verificationCodes").json()["verificationCodes"]
    code = next(c["code"] for c in codes if c["sessionInfo"] == sent["sessionInfo"])
    body = {"sessionInfo": sent["sessionInfo"], "code": code, **({"idToken": id_token} if id_token else {})}
    return call("accounts:signInWithPhoneNumber", body), sent["sessionInfo"], code


def buy(id_token):
    auth = {"Authorization": f"Bearer {id_token}"}
    offer = requests.post(f"{base}/ticket/v1/search", headers=auth, json={
        "products": [PRODUCT], "travellers": [{"id": "me", "userType": "ADULT", "count": 1}], "zones": ["ATB:TariffZone:1"]}).json()["offers"][0]
    order = requests.post(f"{base}/ticket/v1/reserve", headers=auth, json={"offers": [{"offerId": offer["offerId"], "count": 1}],
                                                                           "paymentType": 2}).json()
    pressed = requests.post(order["url"].replace("?t=", "/pay?t="), allow_redirects=False)
    requests.get(pressed.headers["Location"], allow_redirects=False)
    return order["orderId"]


def order_state(id_token, order_id):
    return requests.get(f"{base}/ticket/v1/orders/{order_id}", headers={"Authorization": f"Bearer {id_token}"}).json().get("state")


# The first device: anonymous, a ticket, then the phone number linked.
anonymous = call("accounts:signUp", {"returnSecureToken": True}).json()
uid = anonymous["localId"]
token = with_claims(anonymous)
check("abt_id" in claims(token), "the anonymous user's token carries the claims")
order_id = buy(token)
check(order_state(token, order_id) == "captured", "the anonymous user bought a ticket")
linked, session_info, code = verify_phone(token)
check(linked.status_code == 200 and linked.json()["localId"] == uid and linked.json()["isNewUser"] is False,
      f"the phone number is linked to the anonymous user ({linked.status_code} {linked.text[:80]})")
reused = call("accounts:signInWithPhoneNumber", {"sessionInfo": session_info, "code": code})
check(reused.json().get("error", {}).get("message") == "INVALID_SESSION_INFO", "the used code does not sign in again")

# The second device: the same number signs into the same user.
second, _, _ = verify_phone()
check(second.status_code == 200 and second.json()["localId"] == uid, f"the second device signs into the same uid ({second.text[:80]})")
second_token = second.json()["idToken"]
same = {k: claims(second_token).get(k) for k in ("abt_id", "customer_number")} == {k: claims(token)[k] for k in ("abt_id", "customer_number")}
check(same, "the second device's token carries the same claims")
check(claims(second_token)["firebase"]["sign_in_provider"] == "phone", "its sign_in_provider is phone")
check(order_state(second_token, order_id) == "captured", "the second device sees the order")
lookup = call("accounts:lookup", {"idToken": second_token}).json()["users"][0]
check(lookup.get("phoneNumber") == NUMBER, "accounts:lookup shows the phone number")
wrong = call("accounts:signInWithPhoneNumber", {"sessionInfo": call("accounts:sendVerificationCode", {"phoneNumber": NUMBER}).json()["sessionInfo"],
                                                "code": "not-it"})
check(wrong.status_code == 400 and wrong.json()["error"]["message"] == "INVALID_CODE", "a wrong code is INVALID_CODE")

# Google and Apple: the same provider user twice, one uid; the claims arrive.
uids = [uid]
for provider in ("google.com", "apple.com"):
    answers = []
    for token_text in (unsigned({"sub": f"{provider}-user", "email": f"x@{provider}", "email_verified": True}), json.dumps({"sub": f"{provider}-user"})):
        answers.append(call("accounts:signInWithIdp", {"requestUri": "http://localhost", "returnSecureToken": True,
                                                        "postBody": f"id_token={token_text}&providerId={provider}"}).json())
    check(answers[0].get("localId") and answers[0]["localId"] == answers[1].get("localId"), f"{provider}: two sign-ins, one uid")
    check([a.get("isNewUser") for a in answers] == [True, False], f"{provider}: the first sign-in made the user")
    check("abt_id" in claims(with_claims(answers[1])), f"{provider}: the claims arrive")
    uids.append(answers[0].get("localId"))

# A custom token as an Admin SDK mints it against an emulator (unsigned).
custom = call("accounts:signInWithCustomToken", {"token": unsigned({
    "uid": "custom-flow-user", "claims": {"role": "driver"},
    "aud": "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"}), "returnSecureToken": True}).json()
check(custom.get("isNewUser") is True and claims(custom["idToken"]).get("role") == "driver", "a custom token signs in with its claims")
uids.append("custom-flow-user")

# The external account provider: the code flow with PKCE, then the Firebase session.
REDIRECT = "http://127.0.0.1/callback"
verifier = secrets.token_urlsafe(48)
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
request = {"response_type": "code", "client_id": "faresync-app", "redirect_uri": REDIRECT, "state": "xyz",
           "code_challenge": challenge, "code_challenge_method": "S256"}


def log_in(fields):
    answer = requests.post(f"{base}/oauth/authorize", data={**fields, "username": "ada", "password": "pw"}, allow_redirects=False)
    query = dict(p.split("=", 1) for p in answer.headers.get("Location", "?").split("?", 1)[1].split("&") if "=" in p)
    return answer.status_code, query


def exchange(code, code_verifier, redirect=REDIRECT):
    fields = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "client_id": "faresync-app",
              **({"code_verifier": code_verifier} if code_verifier else {})}
    answer = requests.post(f"{base}/oauth/token", data=fields)
    return answer.status_code, answer.json()


page = requests.get(f"{base}/oauth/authorize", params=request)
check(page.status_code == 200 and "<form" in page.text, f"the provider's login page ({page.status_code})")
status, query = log_in(request)
check(status == 303 and query.get("state") == "xyz" and "code" in query, f"logging in redirects back with a code ({status})")
status, tokens = exchange(query.get("code", ""), verifier)
check(status == 200 and "firebase_custom_token" in tokens and "id_token" in tokens, f"the code and verifier give the tokens ({status})")
oauth = call("accounts:signInWithCustomToken", {"token": tokens.get("firebase_custom_token", ""), "returnSecureToken": True}).json()
oauth_sub = claims(tokens["id_token"])["sub"] if "id_token" in tokens else None
check(oauth.get("idToken") and claims(oauth["idToken"])["sub"] == oauth_sub, "the custom token ends in a Firebase session of the provider's user")
check(exchange(query.get("code", ""), verifier)[1].get("error") == "invalid_grant", "a reused code is invalid_grant")
check(exchange(log_in(request)[1].get("code", ""), None)[1].get("error") == "invalid_request", "no verifier is invalid_request")
check(exchange(log_in(request)[1].get("code", ""), secrets.token_urlsafe(48))[1].get("error") == "invalid_grant", "a wrong verifier is invalid_grant")
foreign = requests.post(f"{base}/oauth/authorize", data={**request, "redirect_uri": "https://attacker.example/cb", "username": "a", "password": "p"},
                        allow_redirects=False)
check(foreign.status_code == 400 and "Location" not in foreign.headers, f"an unregistered redirect URI is not redirected to ({foreign.status_code})")
uids.append(oauth_sub)

# Published: one user-created per user.
time.sleep(0.5)
created = []
for line in open(log_path):
    event = json.loads(json.loads(line).get("payload") or "null")
    if event and event.get("type") == "auth.user.created":
        created.append(event["subject"])
check(sorted(created) == sorted(uids), f"one auth.user.created per user ({len(created)} published for {len(uids)} users)")
with open(uid_file, "w") as out:
    out.write(uid + "\n")
if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print(f"sign-in flow: anonymous + phone link + second device, Google, Apple, custom token, OAuth with PKCE: {len(uids)} users, all checks passed")
