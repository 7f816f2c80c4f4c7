"""The ticket service's token checks against tokens made by an independent JOSE library (PyJWT,
with the `cryptography` package) and this test's own RSA keys, served to FareSync as a JWKS file
(`--jwks`). Every bad token gets its documented status, none a 5xx, and none publishes anything;
a valid token minted the same way is accepted, so the test can pass only for the right reasons.
Then the identity service's refusals of hostile input and stale credentials, each beside the
request that succeeds: a deleted user's token, a refresh token from before a password change,
NUL in a password, invalid UTF-8, non-finite claims, a reused Idempotency-Key with another body,
`Bearer owner` from a foreign Host, a guessed or reused phone code, a custom token signed by a key
the server does not hold, body members of another type, a deleted custom-token uid signing in again,
CORS on the client paths and none on the Admin API, and a half-sent request, which the server closes.

Usage: python3 security_matrix.py FARESYNC WORKDIR PORT
"""
import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

faresync, workdir, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
project = "demo-faresync"
base = f"http://127.0.0.1:{port}"
os.makedirs(workdir, exist_ok=True)

key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
kid = "matrix-key-1"
public_jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
public_jwk.update({"kid": kid, "alg": "RS256", "use": "sig"})
with open(f"{workdir}/jwks.json", "w") as f:
    json.dump({"keys": [public_jwk]}, f)
public_pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

log_path = f"{workdir}/published.jsonl"
server = subprocess.Popen([faresync, "serve", "--http-port", str(port), "--store", f"sqlite:{workdir}/store.sqlite",
                           "--jwks", f"{workdir}/jwks.json", "--log", log_path, "--bcrypt-cost", "4", "--issue-delay", "0"],
                          stderr=open(f"{workdir}/serve.log", "w"), start_new_session=True)
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def published():
    return sum(1 for _ in open(log_path)) if os.path.exists(log_path) else 0


def claims_of(uid):
    h = hashlib.sha256(uid.encode()).digest()
    return {"abt_id": "ATB:CustomerAccount:" + h[:8].hex(),
            "customer_number": 10_000_000 + int.from_bytes(h[8:16], "big") % 90_000_000}


def mint(uid="matrix-a", signing_key=key, headers=None, **overrides):
    now = int(time.time())
    claims = {"iss": f"https://securetoken.google.com/{project}", "aud": project, "sub": uid, "user_id": uid,
              "iat": now, "exp": now + 3600, "auth_time": now,
              "firebase": {"sign_in_provider": "anonymous", "identities": {}}, **claims_of(uid)}
    claims.update(overrides)
    return jwt.encode(claims, signing_key, algorithm="RS256", headers={"kid": kid, **(headers or {})})


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def identity(path, body, headers=None, raw=None):
    return requests.post(f"{base}/identitytoolkit.googleapis.com/v1/{path}", headers=headers or {},
                         **({"data": raw} if raw is not None else {"json": body}))


def error_of(answer):
    try:
        return answer.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return None


def refresh(token):
    return requests.post(f"{base}/securetoken.googleapis.com/v1/token", data={"grant_type": "refresh_token", "refresh_token": token})


def half_sent_request():
    """Opens a connection and sends half a request's headers; the server must close it."""
    half = socket.create_connection(("127.0.0.1", port))
    half.sendall(b"POST /ticket/v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
    return half, time.monotonic()


def closed_within(connection, started, limit):
    connection.settimeout(max(0.1, started + limit - time.monotonic()))
    try:
        closed = connection.recv(1024) == b""
    except (socket.timeout, ConnectionResetError) as error:
        closed = isinstance(error, ConnectionResetError)
    return closed, time.monotonic() - started


try:
    for _ in range(100):
        try:
            if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                break
        except requests.ConnectionError:
            time.sleep(0.1)
    complete = socket.create_connection(("127.0.0.1", port))
    complete.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    check(complete.recv(1024).startswith(b"HTTP/1.1 200"), "a whole request on a raw connection is answered")
    complete.close()
    half, half_started = half_sent_request()
    owner = {"Authorization": "Bearer owner"}
    for uid in ("matrix-a", "matrix-b", "matrix-revoked", "matrix-deleted"):
        created = requests.post(f"{base}/identitytoolkit.googleapis.com/v1/projects/{project}/accounts", headers=owner, json={"localId": uid})
        check(created.status_code == 200, f"the Admin API creates {uid}")
    offer = requests.post(f"{base}/ticket/v1/search", headers={"Authorization": "Bearer " + mint()}, json={
        "products": ["ATB:PreassignedFareProduct:8808c360"], "travellers": [{"id": "t", "userType": "ADULT", "count": 1}],
        "zones": ["ATB:TariffZone:1"]}).json()["offers"][0]["offerId"]
    body = {"offers": [{"offerId": offer, "count": 1}], "paymentType": 1}

    before_valid = published()
    valid = requests.post(f"{base}/ticket/v1/reserve", headers={"Authorization": "Bearer " + mint()}, json=body)
    check(valid.status_code == 201, f"a valid token minted by PyJWT reserves (201, got {valid.status_code})")
    check(published() == before_valid + 1, f"the valid reserve published one message ({published() - before_valid})")
    deleted_token = mint(uid="matrix-deleted")
    check(requests.post(f"{base}/ticket/v1/search", headers={"Authorization": "Bearer " + deleted_token}, json={
        "products": ["ATB:PreassignedFareProduct:8808c360"], "travellers": [{"id": "t", "userType": "ADULT", "count": 1}],
        "zones": ["ATB:TariffZone:1"]}).status_code == 200, "matrix-deleted's token searches before the user is deleted")
    check(identity(f"projects/{project}/accounts:delete", {"localId": "matrix-deleted"}, owner).status_code == 200,
          "the Admin API deletes matrix-deleted")
    order_a = valid.json().get("orderId")
    check(requests.get(f"{base}/ticket/v1/orders/{order_a}", headers={"Authorization": "Bearer " + mint()}).status_code == 200,
          "its owner reads the order")

    time.sleep(1.1)
    revoked = requests.post(f"{base}/identitytoolkit.googleapis.com/v1/projects/{project}/accounts:update", headers=owner,
                            json={"localId": "matrix-revoked", "validSince": str(int(time.time()))})
    check(revoked.status_code == 200, "the Admin API revokes matrix-revoked's tokens")

    now = int(time.time())
    header, payload, signature = mint().split(".")
    unsigned = b64(json.dumps({"alg": "none", "typ": "JWT", "kid": kid}).encode()) + "." + payload + "."
    hs256 = jwt.api_jws.PyJWS()
    hs256._algorithms["HS256"].prepare_key = lambda k: k  # PyJWT refuses a PEM as an HMAC secret; the attack does not
    forged_hs = hs256.encode(base64.urlsafe_b64decode(payload + "==="), public_pem, algorithm="HS256", headers={"kid": kid})
    tampered = header + "." + b64(json.dumps({**json.loads(base64.urlsafe_b64decode(payload + "===")), "sub": "matrix-b"}).encode()) + "." + signature
    cases = [
        ("alg none", {"Authorization": "Bearer " + unsigned}, 401),
        ("HS256 with the RSA public key as secret", {"Authorization": "Bearer " + forged_hs}, 401),
        ("an unknown kid", {"Authorization": "Bearer " + mint(headers={"kid": "no-such-key"})}, 401),
        ("the JWKS's kid with another key's signature", {"Authorization": "Bearer " + mint(signing_key=other_key)}, 401),
        ("expired", {"Authorization": "Bearer " + mint(iat=now - 7200, exp=now - 3600, auth_time=now - 7200)}, 401),
        ("iat in the future", {"Authorization": "Bearer " + mint(iat=now + 3600, exp=now + 7200)}, 401),
        ("auth_time in the future", {"Authorization": "Bearer " + mint(auth_time=now + 3600)}, 401),
        ("wrong aud", {"Authorization": "Bearer " + mint(aud="another-project")}, 401),
        ("wrong iss", {"Authorization": "Bearer " + mint(iss="https://securetoken.google.com/another-project")}, 401),
        ("empty sub", {"Authorization": "Bearer " + mint(uid="")}, 401),
        ("a 129-character sub", {"Authorization": "Bearer " + mint(uid="x" * 129)}, 401),
        ("a token issued before revocation", {"Authorization": "Bearer " + mint(uid="matrix-revoked", iat=now - 30, auth_time=now - 30)}, 401),
        ("a truncated token", {"Authorization": "Bearer " + mint()[:-20]}, 401),
        ("a tampered payload", {"Authorization": "Bearer " + tampered}, 401),
        ("bad base64", {"Authorization": "Bearer " + header + ".%%%not-base64%%%." + signature}, 401),
        ("a 16 KiB header", {"Authorization": "Bearer " + b64(json.dumps({"alg": "RS256", "kid": kid, "pad": "x" * 16384}).encode())
                             + "." + payload + "." + signature}, 401),
        ("no Authorization header", {}, 401),
        ("a Basic credential", {"Authorization": "Basic " + b64(b"matrix-a:secret")}, 401),
        ("a valid token without the claims", {"Authorization": "Bearer " + mint(abt_id=None, customer_number=None)}, 403),
        ("a deleted user's token", {"Authorization": "Bearer " + deleted_token}, 401),
    ]
    before = published()
    for name, headers, expected in cases:
        answer = requests.post(f"{base}/ticket/v1/reserve", headers=headers, json=body)
        ok = answer.status_code == expected and answer.headers.get("Content-Type", "").startswith("application/json")
        if expected == 401:
            ok = ok and answer.headers.get("WWW-Authenticate", "").startswith('Bearer error="invalid_token"')
        check(ok, f"{name}: {answer.status_code} (expected {expected}) {answer.text[:100]}")
    query = requests.post(f"{base}/ticket/v1/reserve?access_token={mint()}&auth={mint()}", json=body)
    check(query.status_code == 401, f"a token in the query string instead of the header: {query.status_code}")
    other = requests.get(f"{base}/ticket/v1/orders/{order_a}", headers={"Authorization": "Bearer " + mint(uid="matrix-b")})
    check(other.status_code == 403, f"another user's order: {other.status_code}")
    check(published() == before, f"no refused request published anything ({published() - before} messages)")

    # Stale credentials: a refresh token from before a password change.
    created = identity(f"projects/{project}/accounts", {"localId": "matrix-pw", "email": "pw@example.com", "password": "secret-1"}, owner)
    check(created.status_code == 200, "the Admin API creates a user with a password")
    old = identity("accounts:signInWithPassword", {"email": "pw@example.com", "password": "secret-1"}).json().get("refreshToken", "")
    check(refresh(old).status_code == 200, "its refresh token refreshes")
    time.sleep(1.1)
    check(identity(f"projects/{project}/accounts:update", {"localId": "matrix-pw", "password": "secret-2"}, owner).status_code == 200,
          "the Admin API changes its password")
    stale = refresh(old)
    check(stale.status_code == 400 and error_of(stale) == "TOKEN_EXPIRED", f"the refresh token from before is refused: {stale.text[:80]}")
    check(identity("accounts:signInWithPassword", {"email": "pw@example.com", "password": "secret-1"}).status_code == 400,
          "the old password is refused")

    # Hostile input, each beside the same request made right.
    nul = identity("accounts:signUp", {"email": "nul@example.com", "password": "abc\u0000defgh"})
    check(nul.status_code == 400 and "NUL" in (error_of(nul) or ""), f"a NUL in a password: {nul.status_code} {error_of(nul)}")
    check(identity("accounts:signUp", {"email": "nul@example.com", "password": "abcdefgh"}).status_code == 200, "the same sign-up without NUL")
    guess = identity("accounts:signInWithPassword", {"email": "nul@example.com", "password": "abc\u0000zzzzz"})
    check(guess.status_code == 400 and "NUL" in (error_of(guess) or ""), f"a sign-in with NUL: {guess.status_code} {error_of(guess)}")
    bad_utf8 = identity("accounts:signUp", None, {"Content-Type": "application/json"},
                        raw=b'{"email":"utf@example.com","password":"secret-\xc3\x28"}')
    check(bad_utf8.status_code == 400 and "UTF-8" in (error_of(bad_utf8) or ""), f"invalid UTF-8: {bad_utf8.status_code} {error_of(bad_utf8)}")
    check(identity("accounts:lookup", {"email": ["utf@example.com"]}, owner).json().get("users") is None, "nothing of it was stored")
    huge = identity(f"projects/{project}/accounts:update", {"localId": "matrix-pw", "customAttributes": '{"n":1e400}'}, owner)
    check(huge.status_code == 400 and error_of(huge).startswith("INVALID_CLAIMS"), f"claims holding 1e400: {huge.status_code} {error_of(huge)}")
    check(identity(f"projects/{project}/accounts:update", {"localId": "matrix-pw", "customAttributes": '{"n":1e3}'}, owner).status_code == 200,
          "finite claims are set")
    check(identity("accounts:signInWithPassword", {"email": "pw@example.com", "password": "secret-2"}).status_code == 200,
          "the user still signs in")

    # An Idempotency-Key is bound to the body it came with.
    keyed = {"Authorization": "Bearer " + mint(), "Idempotency-Key": "matrix-key"}
    first_keyed = requests.post(f"{base}/ticket/v1/reserve", headers=keyed, json=body)
    check(first_keyed.status_code == 201, f"a reserve with an Idempotency-Key: {first_keyed.status_code}")
    after_first = published()
    again = requests.post(f"{base}/ticket/v1/reserve", headers=keyed, json=body)
    check(again.status_code == 200 and again.json().get("orderId") == first_keyed.json().get("orderId"), "the same key and body answer the first order")
    other_body = {**body, "offers": [{"offerId": offer, "count": 2}]}
    reused = requests.post(f"{base}/ticket/v1/reserve", headers=keyed, json=other_body)
    check(reused.status_code == 422, f"the same key with another body: {reused.status_code} {reused.text[:80]}")
    check(published() == after_first, f"neither published anything ({published() - after_first})")

    # The Admin API's emulator credential only from a loopback Host.
    local = identity("accounts:lookup", {"email": ["pw@example.com"]}, {**owner, "Host": f"127.0.0.1:{port}"})
    check(local.status_code == 200 and local.json().get("users"), f"Bearer owner with a loopback Host: {local.status_code}")
    foreign = identity("accounts:lookup", {"email": ["pw@example.com"]}, {**owner, "Host": "attacker.example"})
    check(foreign.status_code == 403, f"Bearer owner with Host: attacker.example: {foreign.status_code}")
    rebound = identity(f"projects/{project}/accounts:update", {"localId": "matrix-pw", "password": "taken-over"},
                       {**owner, "Host": "attacker.example"})
    check(rebound.status_code == 403, f"the Admin API's password change from attacker.example: {rebound.status_code}")

    # Phone codes and custom tokens: each refusal beside the request that succeeds, nothing published for it.
    codes_url = f"{base}/emulator/v1/projects/{project}/verificationCodes"
    sent = identity("accounts:sendVerificationCode", {"phoneNumber": "+4790011223"}).json()
    listed = requests.get(codes_url)
    check(listed.status_code == 200 and any(c["sessionInfo"] == sent.get("sessionInfo") for c in listed.json()["verificationCodes"]),
          "the emulator's code list answers a loopback Host")
    check(requests.get(codes_url, headers={"Host": "attacker.example"}).status_code == 403, "the code list refuses Host: attacker.example")
    code = next(c["code"] for c in listed.json()["verificationCodes"] if c["sessionInfo"] == sent["sessionInfo"])
    before_phone = published()
    guessed = identity("accounts:signInWithPhoneNumber", {"sessionInfo": sent["sessionInfo"], "code": "000000" if code != "000000" else "111111"})
    check(error_of(guessed) == "INVALID_CODE" and published() == before_phone, f"a wrong code: {guessed.status_code} {error_of(guessed)}")
    right = identity("accounts:signInWithPhoneNumber", {"sessionInfo": sent["sessionInfo"], "code": code})
    check(right.status_code == 200 and published() == before_phone + 1, f"the right code makes the user, one event ({right.status_code})")
    again = identity("accounts:signInWithPhoneNumber", {"sessionInfo": sent["sessionInfo"], "code": code})
    check(error_of(again) == "INVALID_SESSION_INFO", f"the code a second time: {error_of(again)}")
    audience = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"
    foreign_custom = jwt.encode({"uid": "matrix-custom", "aud": audience, "iat": now, "exp": now + 3600}, key, algorithm="RS256", headers={"kid": kid})
    refused = identity("accounts:signInWithCustomToken", {"token": foreign_custom})
    check((error_of(refused) or "").startswith("INVALID_CUSTOM_TOKEN"),
          f"a custom token signed by a key the server does not hold: {error_of(refused)}")
    id_token_as_custom = identity("accounts:signInWithCustomToken", {"token": mint()})
    check((error_of(id_token_as_custom) or "").startswith("INVALID_CUSTOM_TOKEN"), f"an ID token as a custom token: {error_of(id_token_as_custom)}")
    check(published() == before_phone + 1, f"no refused sign-in published anything ({published() - before_phone - 1})")

    # A member of another type is a 400 naming it, never read as absent (a number as the idToken
    # of a linking sign-in made a second user); beside it, the same link made right.
    anonymous = identity("accounts:signUp", {}).json()
    linked_sent = identity("accounts:sendVerificationCode", {"phoneNumber": "+4790011224"}).json()
    linked_code = next(c["code"] for c in requests.get(codes_url).json()["verificationCodes"] if c["sessionInfo"] == linked_sent["sessionInfo"])
    before_typed = published()
    numbered = identity("accounts:signInWithPhoneNumber", {"sessionInfo": linked_sent["sessionInfo"], "code": linked_code, "idToken": 123})
    check(numbered.status_code == 400 and (error_of(numbered) or "").startswith("INVALID_ID_TOKEN") and published() == before_typed,
          f"a link whose idToken is a number: {numbered.status_code} {error_of(numbered)}, {published() - before_typed} published")
    typed_email = identity("accounts:signUp", {"email": 123, "password": "secret-1"})
    check(typed_email.status_code == 400 and "/email" in (error_of(typed_email) or "") and published() == before_typed,
          f"a sign-up whose email is a number: {typed_email.status_code} {error_of(typed_email)}")
    linked = identity("accounts:signInWithPhoneNumber",
                      {"sessionInfo": linked_sent["sessionInfo"], "code": linked_code, "idToken": anonymous["idToken"]})
    check(linked.status_code == 200 and linked.json().get("localId") == anonymous["localId"] and published() == before_typed,
          f"the same link with the idToken a string: {linked.status_code}")

    # A custom token's uid whose user was deleted signs in again: a new user, one more event.
    first_custom = identity("accounts:signInWithCustomToken", {"token": '{"uid":"matrix-again"}'})
    deleted = identity(f"projects/{project}/accounts:delete", {"localId": "matrix-again"}, owner)
    before_again = published()
    again_custom = identity("accounts:signInWithCustomToken", {"token": '{"uid":"matrix-again"}'})
    check(first_custom.status_code == 200 and deleted.status_code == 200 and again_custom.status_code == 200
          and again_custom.json().get("isNewUser") is True and published() == before_again + 1,
          f"a deleted custom-token uid signs in again as a new user: {again_custom.status_code} {error_of(again_custom)}")

    # CORS for the SDK in a browser on the client paths, never for the Admin API nor with Authorization.
    asked = {"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "content-type,x-client-version,authorization"}
    preflight = requests.options(f"{base}/identitytoolkit.googleapis.com/v1/accounts:signUp", headers=asked)
    granted = preflight.headers.get("Access-Control-Allow-Headers", "").lower()
    check(preflight.headers.get("Access-Control-Allow-Origin") == "*" and "x-client-version" in granted and "authorization" not in granted
          and "Access-Control-Allow-Credentials" not in preflight.headers,
          f"a preflight of accounts:signUp: {preflight.status_code} {dict(preflight.headers)}")
    token_preflight = requests.options(f"{base}/securetoken.googleapis.com/v1/token", headers=asked)
    check(token_preflight.headers.get("Access-Control-Allow-Origin") == "*", f"a preflight of the token path: {token_preflight.status_code}")
    admin_preflight = requests.options(f"{base}/identitytoolkit.googleapis.com/v1/projects/{project}/accounts:lookup", headers=asked)
    admin_call = identity(f"projects/{project}/accounts:lookup", {"localId": ["matrix-pw"]}, {**owner, "Origin": "http://localhost:5173"})
    check("Access-Control-Allow-Origin" not in admin_preflight.headers and "Access-Control-Allow-Origin" not in admin_call.headers,
          f"the Admin API answers no CORS ({admin_preflight.status_code}, {admin_call.status_code})")

    closed, after = closed_within(half, half_started, 35)
    check(closed, f"a half-sent request's connection was closed by the server after {after:.1f} s (at most 35)")
    # Every 5xx is logged at error level with its request id ("answered 503"); none may have happened.
    server_errors = [line for line in open(f"{workdir}/serve.log") if "answered 5" in line or "critical" in line]
    check(not server_errors, f"the server answered no 5xx ({len(server_errors)} logged)")
finally:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("security matrix: all checks passed")
