"""The shipped firestore.rules against the emulator, with the unsigned ID tokens the emulator
accepts for rules: a user reads their own customer document and what lies under it, is refused
another user's, and writes nothing.

usage: rules_check.py EXPORT_FILE PROJECT   (FIRESTORE_EMULATOR_HOST names the emulator)
"""

import base64
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from google.cloud import firestore

from firestore_common import differences, read_export, timestamp_members


def b64(data):
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def id_token(project, uid, claims):
    """An unsigned token with the claims a Firebase ID token carries."""
    now = int(time.time())
    payload = {"iss": f"https://securetoken.google.com/{project}", "aud": project, "auth_time": now, "user_id": uid,
               "sub": uid, "iat": now, "exp": now + 3600,
               "firebase": {"identities": {}, "sign_in_provider": "anonymous"}, **claims}
    return b64({"alg": "none", "typ": "JWT"}) + "." + b64(payload) + "."


def call(method, url, token, body=None):
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    documents = read_export(sys.argv[1])
    project = sys.argv[2]
    host = os.environ["FIRESTORE_EMULATOR_HOST"]
    base = f"http://{host}/v1/projects/{project}/databases/(default)/documents"
    owners = sorted({p.split("/")[1] for p in documents if p.startswith("customers/") and "/fareContracts/" in p})
    if len(owners) < 2:
        raise SystemExit("need two users with fare contracts")
    a, b = owners[0], owners[1]
    users = {uid: documents.get(f"authUsers/{uid}", {}).get("customClaims", {}) for uid in (a, b)}
    token_a = id_token(project, a, users[a])
    contract_b = next(p for p in documents if p.startswith(f"customers/{b}/fareContracts/"))
    contract_a = next(p for p in documents if p.startswith(f"customers/{a}/fareContracts/"))
    quote = lambda path: "/".join(urllib.parse.quote(part, safe="") for part in path.split("/"))
    cases = [
        ("A reads A's fare contracts", "GET", f"{base}/customers/{quote(a)}/fareContracts", token_a, None, 200),
        ("A reads one of A's fare contracts", "GET", f"{base}/{quote(contract_a)}", token_a, None, 200),
        ("A reads A's customer document", "GET", f"{base}/customers/{quote(a)}", token_a, None, 200),
        ("A reads A's reservations", "GET", f"{base}/customers/{quote(a)}/reservations", token_a, None, 200),
        ("A lists B's fare contracts", "GET", f"{base}/customers/{quote(b)}/fareContracts", token_a, None, 403),
        ("A reads one of B's fare contracts", "GET", f"{base}/{quote(contract_b)}", token_a, None, 403),
        ("A reads B's customer document", "GET", f"{base}/customers/{quote(b)}", token_a, None, 403),
        ("A reads the auth users", "GET", f"{base}/authUsers/{quote(a)}", token_a, None, 403),
        ("A reads the dead letters", "GET", f"{base}/deadLetters", token_a, None, 403),
        ("no token reads A's fare contracts", "GET", f"{base}/customers/{quote(a)}/fareContracts", None, None, 403),
        ("A changes A's fare contract", "PATCH", f"{base}/{quote(contract_a)}", token_a, {"fields": {"state": {"integerValue": "2"}}}, 403),
        ("A creates a fare contract", "POST", f"{base}/customers/{quote(a)}/fareContracts?documentId=mine", token_a, {"fields": {}}, 403),
        ("A deletes A's fare contract", "DELETE", f"{base}/{quote(contract_a)}", token_a, None, 403),
        ("A writes A's customer document", "PATCH", f"{base}/customers/{quote(a)}", token_a, {"fields": {}}, 403),
    ]
    failures = 0
    for name, method, url, token, body, expected in cases:
        status = call(method, url, token, body)
        ok = status == expected
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {status} (expected {expected})")
    # The contract A may not change is unchanged, and A's creation left nothing: read with the
    # emulator's owner access, which the rules do not restrict.
    db = firestore.Client(project=project)
    kept = db.document(contract_a).get()
    changed = differences(documents[contract_a], kept.to_dict(), contract_a, timestamp_members(contract_a)) if kept.exists else ["gone"]
    failures += bool(changed)
    print(f"{'FAIL' if changed else 'ok  '} A's fare contract is as the store has it after A's writes: {'; '.join(changed[:3]) or 'unchanged'}")
    created = db.document(f"customers/{a}/fareContracts/mine").get().exists
    failures += created
    print(f"{'FAIL' if created else 'ok  '} A's refused creation left no document")
    print(f"rules: {len(cases) + 2 - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
