"""The app's five Firestore listeners (mittatb-app, src/modules/ticketing/firestore.ts), run with
Google's Python client against the emulator FareSync mirrors into, for a few users of a store:
each listener's first snapshot must hold what `faresync export` holds for that user, typed as the
app reads it (timestamps as datetimes).

usage: app_listeners.py EXPORT_FILE PROJECT [USERS]   (FIRESTORE_EMULATOR_HOST names the emulator)
"""

import collections
import datetime
import sys
import threading

from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter

from firestore_common import differences, instant, read_export, timestamp_members


def pick_users(documents, count):
    """Users with the most to show: contracts, open reservations, a rejected payment."""
    contracts = collections.Counter()
    reservations = collections.Counter()
    rejected = set()
    for path, data in documents.items():
        parts = path.split("/")
        if len(parts) == 4 and parts[0] == "customers":
            if parts[2] == "fareContracts":
                contracts[parts[1]] += 1
            elif parts[2] == "reservations":
                reservations[parts[1]] += 1
                if data.get("paymentStatus") == "REJECT":
                    rejected.add(parts[1])
    chosen = [uid for uid, _ in contracts.most_common(count)]
    chosen += [uid for uid, _ in reservations.most_common(2)]
    chosen += sorted(rejected)[:2]
    return list(dict.fromkeys(chosen))[: count + 3]


def first_snapshot(subscribe):
    """Subscribes with on_snapshot and waits for the first snapshot; returns its documents."""
    done = threading.Event()
    seen = {}

    def callback(snapshot, changes, read_time):
        if not done.is_set():
            seen["docs"] = snapshot
            done.set()

    watch = subscribe(callback)
    if not done.wait(30):
        watch.unsubscribe()
        raise SystemExit("no snapshot within 30 s")
    watch.unsubscribe()
    return seen["docs"]


def main():
    export_file, project = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    documents = read_export(export_file)
    db = firestore.Client(project=project)
    users = pick_users(documents, count)
    if not users:
        raise SystemExit("the export has no customers with contracts or reservations")
    problems = []
    checked = collections.Counter()
    for uid in users:
        prefix = f"customers/{uid}/"
        contracts = {p: d for p, d in documents.items() if p.startswith(prefix + "fareContracts/") and p.count("/") == 3}
        reservations = {p: d for p, d in documents.items() if p.startswith(prefix + "reservations/") and p.count("/") == 3}
        customer = db.collection("customers").document(uid)

        # 1. fareContracts ordered by created, newest first.
        query = customer.collection("fareContracts").order_by("created", direction=firestore.Query.DESCENDING)
        snap = first_snapshot(query.on_snapshot)
        got = {d.reference.path: d.to_dict() for d in snap}
        if set(got) != set(contracts):
            problems.append(f"{uid} fareContracts: {sorted(got)} != {sorted(contracts)}")
        # The order as the server gives it (the Python client's watch hands snapshots to the
        # callback in its own order; the app's SDK keeps the query's).
        times = [d.to_dict()["created"] for d in query.get()]
        if not all(isinstance(t, datetime.datetime) for t in times) or times != sorted(times, reverse=True):
            problems.append(f"{uid} fareContracts not newest first: {times}")
        for path, data in contracts.items():
            problems += differences(data, got.get(path), path, timestamp_members(path))
        checked["fareContracts"] += len(got)

        # 2. sentFareContracts ordered by created, newest first (FareSync writes none).
        snap = first_snapshot(customer.collection("sentFareContracts").order_by("created", direction=firestore.Query.DESCENDING).on_snapshot)
        expected_sent = [p for p in documents if p.startswith(prefix + "sentFareContracts/")]
        if len(snap) != len(expected_sent):
            problems.append(f"{uid} sentFareContracts: {len(snap)} != {len(expected_sent)}")

        # 3. reservations created after a cut-off: the oldest reservation's time when the user has
        #    several (the query then keeps some and drops one), else a second before its only one.
        created = sorted(instant(d["created"]) for d in reservations.values())
        if len(created) >= 2:
            cutoff = created[0]
        elif created:
            cutoff = created[0] - datetime.timedelta(seconds=1)
        else:
            cutoff = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
        snap = first_snapshot(customer.collection("reservations").where(filter=FieldFilter("created", ">", cutoff)).on_snapshot)
        expected = {p for p, d in reservations.items() if instant(d["created"]) > cutoff}
        got = {d.reference.path: d.to_dict() for d in snap}
        if set(got) != expected:
            problems.append(f"{uid} reservations after {cutoff}: {sorted(got)} != {sorted(expected)}")
        for path in expected & set(got):
            problems += differences(reservations[path], got[path], path, timestamp_members(path))
        checked["reservations"] += len(got)

        # 4. reservations whose payment was rejected.
        snap = first_snapshot(customer.collection("reservations").where(filter=FieldFilter("paymentStatus", "==", "REJECT")).on_snapshot)
        expected = {p for p, d in reservations.items() if d.get("paymentStatus") == "REJECT"}
        got = {d.reference.path for d in snap}
        if got != expected:
            problems.append(f"{uid} rejected reservations: {sorted(got)} != {sorted(expected)}")
        checked["rejected reservations"] += len(got)

        # 5. the customer document itself.
        snap = first_snapshot(customer.on_snapshot)
        document = snap[0] if snap else None
        path = f"customers/{uid}"
        if path in documents:
            if document is None or not document.exists:
                problems.append(f"{path}: missing")
            else:
                problems += differences(documents[path], document.to_dict(), path, timestamp_members(path))
                if not isinstance(document.to_dict().get("created"), datetime.datetime):
                    problems.append(f"{path}.created is not a timestamp")
        checked["customers"] += 1

    for problem in problems[:40]:
        print("PROBLEM", problem)
    summary = ", ".join(f"{n} {what}" for what, n in sorted(checked.items()))
    print(f"app listeners: {len(users)} users, {summary}; {len(problems)} problems")
    if not checked["fareContracts"] or not checked["reservations"]:
        raise SystemExit("the listeners saw no contracts or no reservations: nothing was compared")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
