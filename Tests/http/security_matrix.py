"""The ticket service's token checks against tokens made by an independent JOSE library (PyJWT,
with the `cryptography` package) and this test's own RSA keys, served to FareSync as a JWKS file
(`--jwks`). Every bad token gets its documented status, none a 500, and none publishes anything;
a valid token minted the same way is accepted, so the test can pass only for the right reasons.

Usage: python3 security_matrix.py FARESYNC WORKDIR PORT
"""
import base64
import hashlib
import json
import os
import signal
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


try:
    for _ in range(100):
        try:
            if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                break
        except requests.ConnectionError:
            time.sleep(0.1)
    owner = {"Authorization": "Bearer owner"}
    for uid in ("matrix-a", "matrix-b", "matrix-revoked"):
        created = requests.post(f"{base}/identitytoolkit.googleapis.com/v1/projects/{project}/accounts", headers=owner, json={"localId": uid})
        check(created.status_code == 200, f"the Admin API creates {uid}")
    offer = requests.post(f"{base}/ticket/v1/search", headers={"Authorization": "Bearer " + mint()}, json={
        "products": ["ATB:PreassignedFareProduct:8808c360"], "travellers": [{"id": "t", "userType": "ADULT", "count": 1}],
        "zones": ["ATB:TariffZone:1"]}).json()["offers"][0]["offerId"]
    body = {"offers": [{"offerId": offer, "count": 1}], "paymentType": 1}

    valid = requests.post(f"{base}/ticket/v1/reserve", headers={"Authorization": "Bearer " + mint()}, json=body)
    check(valid.status_code == 201, f"a valid token minted by PyJWT reserves (201, got {valid.status_code})")
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
    server_errors = [line for line in open(f"{workdir}/serve.log") if " 500 " in line or "critical" in line]
    check(not server_errors, "the server logged no 500")
finally:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("security matrix: all checks passed")
