"""One recorded exchange with `faresync serve`, compared as JSON values: every API family as the
app and the Admin SDK call it (sign-up and sign-in every way, lookups, updates, refresh, the Admin
API, phone codes, a custom token, an identity provider, the ticket flow through the terminal, the
OAuth provider, errors, health and the OpenAPI document). Each answer is kept as its status, the
headers a client reads, and its body (parsed when JSON). What differs between runs — tokens, uids,
codes, order ids, the port — is named by its first appearance (`<localId#2>`), also inside URLs
and pages; a time is `<time>`, and a token (a JWT) is compared as its header and claims, so two runs of one server, or of two builds, compare equal when they answer alike.

The server runs with `--oauth-provider --oauth-redirect-uri http://127.0.0.1/callback` on an
empty store.

Usage: python3 exchange.py BASE_URL --record FILE    (writes the exchange)
       python3 exchange.py BASE_URL FILE             (compares with the recorded one)
"""
import base64
import hashlib
import json
import re
import sys
import time

import requests

base = sys.argv[1].rstrip("/")
record = sys.argv[2] == "--record"
path = sys.argv[3] if record else sys.argv[2]
IDENTITY = f"{base}/identitytoolkit.googleapis.com/v1"
ADMIN = {"Authorization": "Bearer owner"}
HEADERS = ["content-type", "location", "www-authenticate", "idempotent-replayed", "retry-after", "cache-control",
           "access-control-allow-origin"]
# Members whose values differ between runs, and members holding times.
VOLATILE = {"refreshToken", "refresh_token", "access_token", "localId", "user_id", "sub", "uid", "sessionInfo",
            "code", "orderId", "paymentId", "transactionId", "terminalToken", "temporaryProof",
            "kid", "n", "url", "offerId", "federatedId", "rawId", "abt_id", "customer_number",
            "customerAccountId", "customerNumber", "t"}
TIMES = {"createdAt", "lastLoginAt", "lastRefreshAt", "validSince", "passwordUpdatedAt", "created", "expiresAt", "updated",
         "expires", "reserved", "captured", "iat", "exp", "auth_time"}
# Numbers that differ between runs (elsewhere a number is compared as it is).
NUMBERS = {"paymentId", "transactionId", "customer_number", "customerNumber"}
JWT = re.compile(r"^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")
exchange = []


def keep(name, answer):
    """Keeps the answer as the exchange's step `name`; returns its body parsed (or its text)."""
    try:
        body = answer.json()
    except ValueError:
        body = answer.text
    headers = {h: answer.headers[h] for h in HEADERS if h in answer.headers}
    exchange.append({"step": name, "status": answer.status_code, "headers": headers, "body": body})
    return body


def post(name, path, body=None, form=None, headers=None):
    return keep(name, requests.post(base + path, json=body, data=form, headers=headers or {}, allow_redirects=False))


def get(name, path, headers=None, params=None):
    return keep(name, requests.get(base + path, headers=headers or {}, params=params, allow_redirects=False))


def unsigned(payload):
    part = lambda value: base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return part({"alg": "none", "typ": "JWT"}) + "." + part(payload) + "."


def refreshed_with_claims(session):
    """The app refreshes until the ID token carries the claims the user-created trigger sets."""
    for _ in range(50):
        answer = requests.post(f"{base}/securetoken.googleapis.com/v1/token",
                               data={"grant_type": "refresh_token", "refresh_token": session["refreshToken"]}).json()
        claims = json.loads(base64.urlsafe_b64decode(answer["id_token"].split(".")[1] + "==="))
        if "abt_id" in claims:
            return answer["id_token"]
        time.sleep(0.1)
    sys.exit("the user's claims never came")


# Sign-up and sign-in, and their refusals.
anonymous = post("sign up anonymously", "/identitytoolkit.googleapis.com/v1/accounts:signUp", {"returnSecureToken": True})
user = post("sign up with a password", "/identitytoolkit.googleapis.com/v1/accounts:signUp",
            {"email": "exchange@example.com", "password": "secret-1", "returnSecureToken": True})
post("the same email again", "/identitytoolkit.googleapis.com/v1/accounts:signUp", {"email": "exchange@example.com", "password": "x-123456"})
post("a weak password", "/identitytoolkit.googleapis.com/v1/accounts:signUp", {"email": "weak@example.com", "password": "x"})
post("a mistyped member", "/identitytoolkit.googleapis.com/v1/accounts:signUp", {"email": 5})
keep("a body that is not JSON", requests.post(f"{IDENTITY}/accounts:signUp", data="{", headers={"Content-Type": "application/json"}))
post("sign in with the password", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
     {"email": "exchange@example.com", "password": "secret-1", "returnSecureToken": True})
post("a wrong password", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
     {"email": "exchange@example.com", "password": "secret-2"})
post("an unknown email", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
     {"email": "nobody@example.com", "password": "secret-1"})
post("look the user up", "/identitytoolkit.googleapis.com/v1/accounts:lookup", {"idToken": user["idToken"]})
post("set a display name", "/identitytoolkit.googleapis.com/v1/accounts:update",
     {"idToken": user["idToken"], "displayName": "Exchange", "returnSecureToken": True})
post("refresh a token", "/securetoken.googleapis.com/v1/token", form={"grant_type": "refresh_token", "refresh_token": user["refreshToken"]})
post("refresh with JSON", "/securetoken.googleapis.com/v1/token", {"grant_type": "refresh_token", "refresh_token": anonymous["refreshToken"]})
post("refresh with a token never issued", "/securetoken.googleapis.com/v1/token", form={"grant_type": "refresh_token", "refresh_token": "nope"})
get("the signing keys", "/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com")

# A phone number, a custom token, an identity provider.
get("recaptcha parameters", "/identitytoolkit.googleapis.com/v1/recaptchaParams")
sent = post("send a code", "/identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode",
            {"phoneNumber": "+4798765432", "recaptchaToken": "fake"})
codes = get("the emulator's codes", "/emulator/v1/projects/demo-faresync/verificationCodes")
code = next(c["code"] for c in codes["verificationCodes"] if c["sessionInfo"] == sent["sessionInfo"])
post("a wrong code", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPhoneNumber",
     {"sessionInfo": sent["sessionInfo"], "code": "000000" if code != "000000" else "111111"})
post("sign in with the code", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPhoneNumber",
     {"sessionInfo": sent["sessionInfo"], "code": code})
post("a custom token without its audience", "/identitytoolkit.googleapis.com/v1/accounts:signInWithCustomToken",
     {"token": unsigned({"uid": "exchange-custom", "claims": {"tier": "gold"}}), "returnSecureToken": True})
post("a custom token", "/identitytoolkit.googleapis.com/v1/accounts:signInWithCustomToken",
     {"token": unsigned({"uid": "exchange-custom", "claims": {"tier": "gold"},
                         "aud": "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"}),
      "returnSecureToken": True})
post("Google", "/identitytoolkit.googleapis.com/v1/accounts:signInWithIdp",
     {"postBody": "id_token=" + unsigned({"sub": "exchange-google", "email": "g@example.com"}) + "&providerId=google.com",
      "requestUri": "http://localhost", "returnSecureToken": True, "returnIdpCredential": True})
post("an unknown provider", "/identitytoolkit.googleapis.com/v1/accounts:signInWithIdp",
     {"postBody": "id_token=x&providerId=example.com", "requestUri": "http://localhost"})

# The Admin API.
post("the Admin API makes a user", "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts",
     {"localId": "exchange-admin", "email": "admin@example.com", "password": "secret-9"}, headers=ADMIN)
post("the Admin API looks it up", "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts:lookup",
     {"localId": ["exchange-admin"]}, headers=ADMIN)
post("the Admin API sets claims", "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts:update",
     {"localId": "exchange-admin", "customAttributes": json.dumps({"role": "staff"})}, headers=ADMIN)
post("the Admin API without its token", "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts:lookup",
     {"localId": ["exchange-admin"]})
post("the Admin API deletes it", "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts:delete",
     {"localId": "exchange-admin"}, headers=ADMIN)

# The ticket flow through the terminal.
token = refreshed_with_claims(anonymous)
auth = {"Authorization": f"Bearer {token}"}
offers = post("search", "/ticket/v1/search", {"products": ["ATB:PreassignedFareProduct:8808c360"],
                                              "travellers": [{"id": "me", "userType": "ADULT", "count": 1}],
                                              "zones": ["ATB:TariffZone:1"]}, headers=auth)
reserve = {"offers": [{"offerId": offers["offers"][0]["offerId"], "count": 1}], "paymentType": 2}
order = post("reserve", "/ticket/v1/reserve", reserve, headers={**auth, "Idempotency-Key": "exchange-1"})
post("reserve again with the key", "/ticket/v1/reserve", reserve, headers={**auth, "Idempotency-Key": "exchange-1"})
post("reserve without a token", "/ticket/v1/reserve", reserve)
post("reserve nothing", "/ticket/v1/reserve", {"offers": [], "paymentType": 2}, headers=auth)
get("the reservations", "/ticket/v1/reservations", headers=auth)
get("the order", f"/ticket/v1/orders/{order['orderId']}", headers=auth)
terminal = order["url"].replace(base, "")
get("the terminal's page", terminal)
paid = requests.post(base + terminal.replace("?t=", "/pay?t="), allow_redirects=False)
keep("pay", paid)
get("the payment's callback", paid.headers["Location"].replace(base, ""))
get("a wrong terminal token", terminal.split("?")[0] + "?t=wrong")
for _ in range(50):
    if requests.get(f"{base}/ticket/v1/orders/{order['orderId']}", headers=auth).json().get("state") == "ISSUED":
        break
    time.sleep(0.1)
get("the order once issued", f"/ticket/v1/orders/{order['orderId']}", headers=auth)

# The OAuth provider, with PKCE.
verifier = "exchange-verifier-" + "v" * 40
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
request = {"response_type": "code", "client_id": "faresync-app", "redirect_uri": "http://127.0.0.1/callback",
           "state": "xyz", "code_challenge": challenge, "code_challenge_method": "S256"}
get("the provider's page", "/oauth/authorize", params=request)
logged_in = requests.post(f"{base}/oauth/authorize", data={**request, "username": "ada", "password": "pw"}, allow_redirects=False)
keep("log in at the provider", logged_in)
oauth_code = logged_in.headers["Location"].split("code=")[1].split("&")[0]
post("a code without its verifier", "/oauth/token", form={"grant_type": "authorization_code", "code": oauth_code,
                                                           "redirect_uri": request["redirect_uri"], "client_id": "faresync-app"})
code_again = requests.post(f"{base}/oauth/authorize", data={**request, "username": "ada", "password": "pw"}, allow_redirects=False)
oauth_code = code_again.headers["Location"].split("code=")[1].split("&")[0]
post("the code and its verifier", "/oauth/token", form={"grant_type": "authorization_code", "code": oauth_code,
                                                         "redirect_uri": request["redirect_uri"], "client_id": "faresync-app",
                                                         "code_verifier": verifier})

get("healthz", "/healthz")
get("readyz", "/readyz")
get("the OpenAPI document", "/openapi.json")


def decoded(value):
    """The value with each token (a JWT) as its header and claims."""
    if isinstance(value, dict):
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decoded(v) for v in value]
    if isinstance(value, str) and JWT.match(value):
        part = lambda text: json.loads(base64.urlsafe_b64decode(text + "==="))
        header, claims, _ = value.split(".")
        return {"jwt": {"header": part(header), "claims": part(claims)}}
    return value


def named(steps):
    """The exchange with each run's own values named by their first appearance, tokens decoded."""
    steps = decoded(steps)
    names = {}

    def name_of(member, value):
        """One name per value, after the member it first appears in."""
        key = json.dumps(value)
        if key not in names:
            names[key] = f"<{member}#{sum(1 for n in names.values() if n.startswith(f'<{member}#')) + 1}>"
        return names[key]

    def collect(value, member=None):
        # In member order, so that the names do not depend on the order an answer writes its members in.
        if isinstance(value, dict):
            for k, v in sorted(value.items()):
                collect(v, k)
        elif isinstance(value, list):
            for v in value:
                collect(v, member)
        elif member == "customAttributes" and isinstance(value, str):
            collect(json.loads(value))
        elif (member in VOLATILE and isinstance(value, str) and value) or (member in NUMBERS and isinstance(value, int)):
            name_of(member, value)

    for step in steps:
        collect(step["body"])
        location = step["headers"].get("location", "")
        for pair in location.split("?", 1)[1].split("&") if "?" in location else []:
            collect(*reversed(pair.split("=", 1))) if "=" in pair else None
    # Longest first, so that a value inside another (a uid inside a path) is named after it.
    # Numbers of six digits or more (payment and transaction ids) are named inside text too.
    texts = sorted(((str(json.loads(v)), n) for v, n in names.items()
                    if isinstance(json.loads(v), str) or len(v) >= 6), key=lambda pair: -len(pair[0]))
    port = re.escape(base)

    def rename(value, member=None):
        if isinstance(value, dict):
            return {k: rename(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [rename(v, member) for v in value]
        if member in TIMES and value is not None:
            return "<time>"
        if member == "customAttributes" and isinstance(value, str):
            return json.dumps(rename(json.loads(value)), sort_keys=True)
        if member in NUMBERS and isinstance(value, int):
            return names[json.dumps(value)]
        if isinstance(value, str):
            value = re.sub(port, "<base>", value)
            for text, name in texts:
                value = value.replace(text, name)
            return value
        return value

    return [rename(step) for step in steps]


got = named(exchange)
if record:
    with open(path, "w") as out:
        json.dump(got, out, indent=1, sort_keys=True, ensure_ascii=False)
        out.write("\n")
    print(f"recorded {len(got)} steps in {path}")
    sys.exit(0)
with open(path) as f:
    recorded = json.load(f)
differences = [f"{want['step']}: recorded {json.dumps(want, sort_keys=True)[:600]}\n   now {json.dumps(have, sort_keys=True)[:600]}"
               for want, have in zip(recorded, got) if want != have]
if len(recorded) != len(got):
    differences.append(f"{len(recorded)} steps recorded, {len(got)} now")
for difference in differences:
    print("differs: " + difference)
print(f"{len(got)} steps, {len(differences)} differing from the recording")
sys.exit(1 if differences else 0)
