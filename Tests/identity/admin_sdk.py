"""The identity service through Google's own Firebase Admin SDK for Python (firebase-admin, in
emulator mode through FIREBASE_AUTH_EMULATOR_HOST), and its tokens through PyJWT with the served
JWKS: an independent client and an independent JOSE library.

Usage: FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:PORT python3 admin_sdk.py PROJECT
"""
import hashlib
import json
import os
import sys
import time
import urllib.request

import firebase_admin
import jwt
from firebase_admin import auth

project = sys.argv[1]
host = os.environ["FIREBASE_AUTH_EMULATOR_HOST"]
base = f"http://{host}"
firebase_admin.initialize_app(options={"projectId": project})
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def expected_claims(uid):
    """SPEC 3.1: the simulated Entur's ids, pure functions of the uid."""
    h = hashlib.sha256(uid.encode()).digest()
    return {"abt_id": "ATB:CustomerAccount:" + h[:8].hex(),
            "customer_number": 10_000_000 + int.from_bytes(h[8:16], "big") % 90_000_000}


def post(path, body, params=""):
    request = urllib.request.Request(f"{base}{path}?key=fake{params}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


# 20 users created by the Admin SDK; each one's claims appear within 5 s.
started = time.monotonic()
uids = [auth.create_user(uid=f"admin-user-{i:02d}", email=f"user{i}@example.com", password=f"secret-{i}").uid for i in range(20)]
pending = set(uids)
deadline = started + 5
while pending and time.monotonic() < deadline:
    for uid in list(pending):
        claims = auth.get_user(uid).custom_claims or {}
        if claims.get("customer_number") is not None and claims.get("abt_id") is not None:
            check(claims == expected_claims(uid), f"{uid}: custom_claims {claims} are SPEC's derivation")
            pending.discard(uid)
    if pending:
        time.sleep(0.05)
check(not pending, f"20 users provisioned within 5 s ({time.monotonic() - started:.2f} s)")

# Lookups, errors the SDK maps to its own exceptions, updates, deletion.
user = auth.get_user_by_email("user3@example.com")
check(user.uid == "admin-user-03" and user.email == "user3@example.com", "get_user_by_email finds the user")
try:
    auth.create_user(uid="admin-user-03")
    check(False, "a second user with the same uid is refused")
except auth.UidAlreadyExistsError:
    check(True, "a second user with the same uid is refused (UidAlreadyExistsError)")
try:
    auth.create_user(email="user4@example.com")
    check(False, "a second user with the same email is refused")
except auth.EmailAlreadyExistsError:
    check(True, "a second user with the same email is refused (EmailAlreadyExistsError)")
try:
    auth.get_user("nobody")
    check(False, "an unknown uid is not found")
except auth.UserNotFoundError:
    check(True, "an unknown uid is not found (UserNotFoundError)")
auth.set_custom_user_claims("admin-user-05", {"role": "inspector"})
check(auth.get_user("admin-user-05").custom_claims == {"role": "inspector"}, "set_custom_user_claims replaces the claims")
auth.update_user("admin-user-06", display_name="Six", disabled=True)
six = auth.get_user("admin-user-06")
check(six.display_name == "Six" and six.disabled, "update_user sets the display name and disables")
auth.delete_user("admin-user-07")
try:
    auth.get_user("admin-user-07")
    check(False, "a deleted user is gone")
except auth.UserNotFoundError:
    check(True, "a deleted user is gone")

# The client API: sign in with the password, the ID token verifies with PyJWT against the JWKS.
status, session = post("/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
                       {"email": "user1@example.com", "password": "secret-1", "returnSecureToken": True})
check(status == 200 and session.get("localId") == "admin-user-01", f"signInWithPassword answers 200 ({status})")
status, other = post("/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
                     {"email": "user1@example.com", "password": "secret-2", "returnSecureToken": True})
check(status == 400, f"another user's password is refused ({status}): each user has a password of its own")
status, wrong = post("/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
                     {"email": "user1@example.com", "password": "wrong-password", "returnSecureToken": True})
check(status == 400 and wrong["error"]["message"] == "INVALID_PASSWORD", "a wrong password is INVALID_PASSWORD")
jwks = jwt.PyJWKClient(f"{base}/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com")
token = session["idToken"]
key = jwks.get_signing_key_from_jwt(token)
claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=project, issuer=f"https://securetoken.google.com/{project}")
check(claims["sub"] == claims["user_id"] == "admin-user-01", "PyJWT verifies the ID token's signature, aud and iss")
check(claims["exp"] - claims["iat"] == 3600 and claims["auth_time"] <= claims["iat"], "exp is an hour after iat")
check({k: claims[k] for k in ("abt_id", "customer_number")} == expected_claims("admin-user-01"), "the ID token carries the claims")
check(claims["firebase"]["sign_in_provider"] == "password" and claims["firebase"]["identities"] == {"email": ["user1@example.com"]},
      "firebase.sign_in_provider and identities")

# Revocation: refresh tokens issued before it stop working.
time.sleep(1.1)
auth.revoke_refresh_tokens("admin-user-01")
status, refreshed = post("/securetoken.googleapis.com/v1/token", {"grant_type": "refresh_token", "refresh_token": session["refreshToken"]})
check(status == 400 and refreshed["error"]["message"] == "TOKEN_EXPIRED", f"a revoked refresh token is TOKEN_EXPIRED ({status})")
check(auth.get_user("admin-user-01").tokens_valid_after_timestamp >= 1000 * int(time.time() - 5), "tokens_valid_after_timestamp moved")

# Phone numbers: a user created with one is found by it, and the number signs into that user.
auth.create_user(uid="admin-phone", phone_number="+4791234567")
found = auth.get_user_by_phone_number("+4791234567")
check(found.uid == "admin-phone" and found.phone_number == "+4791234567", "get_user_by_phone_number finds the user")
check([p.provider_id for p in found.provider_data] == ["phone"], "its provider_data names the phone")
try:
    auth.create_user(phone_number="+4791234567")
    check(False, "a second user with the same phone number is refused")
except auth.PhoneNumberAlreadyExistsError:
    check(True, "a second user with the same phone number is refused (PhoneNumberAlreadyExistsError)")
try:
    auth.get_user_by_phone_number("+4790000000")
    check(False, "an unknown phone number is not found")
except auth.UserNotFoundError:
    check(True, "an unknown phone number is not found (UserNotFoundError)")
auth.update_user("admin-user-08", phone_number="+4791234568")
check(auth.get_user_by_phone_number("+4791234568").uid == "admin-user-08", "update_user sets a phone number")
auth.update_user("admin-user-08", phone_number=auth.DELETE_ATTRIBUTE)
check(auth.get_user("admin-user-08").phone_number is None, "update_user removes it (DELETE_ATTRIBUTE)")
status, sent = post("/identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode", {"phoneNumber": "+4791234567"})
with urllib.request.urlopen(f"{base}/emulator/v1/projects/{project}/verificationCodes") as response:
    code = next(c["code"] for c in json.load(response)["verificationCodes"] if c["sessionInfo"] == sent.get("sessionInfo"))
status, phone_session = post("/identitytoolkit.googleapis.com/v1/accounts:signInWithPhoneNumber", {"sessionInfo": sent["sessionInfo"], "code": code})
check(status == 200 and phone_session.get("localId") == "admin-phone", f"the number signs into the Admin SDK's user ({status})")

# A custom token the SDK mints against an emulator (unsigned) signs in its uid with its claims.
custom = auth.create_custom_token("admin-custom", {"role": "driver"}).decode()
status, custom_session = post("/identitytoolkit.googleapis.com/v1/accounts:signInWithCustomToken", {"token": custom, "returnSecureToken": True})
check(status == 200 and custom_session.get("isNewUser") is True, f"create_custom_token's token signs in ({status})")
custom_claims = jwt.decode(custom_session.get("idToken", ""), options={"verify_signature": False})
check(custom_claims.get("sub") == "admin-custom" and custom_claims.get("role") == "driver", "its ID token has the uid and the claims")
check(auth.get_user("admin-custom").uid == "admin-custom", "the Admin SDK finds the user the custom token made")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("admin sdk: all checks passed")
