"""What the Firestore checks share: reading `faresync export`, and comparing a store document with
what Google's Python client reads from the emulator, as the app would read it."""

import datetime
import json
import re

RFC3339 = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d+)?([Zz]|[+-]\d\d:\d\d)$")

# The members FareSync types as timestamps (the schemas' date-times), per kind of document.
CONTRACT_TIMES = {"created"}
RIGHT_TIMES = {"startDateTime", "endDateTime"}


def instant(text):
    """An RFC 3339 date-time as an aware datetime in UTC, truncated to microseconds, or None."""
    m = RFC3339.match(text) if isinstance(text, str) else None
    if not m:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = (m.group(7) or ".0")[1:]
    micros = int((fraction + "000000")[:6])
    zone = m.group(8)
    if zone in ("Z", "z"):
        offset = datetime.timedelta(0)
    else:
        sign = -1 if zone[0] == "-" else 1
        offset = sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    local = datetime.datetime(year, month, day, hour, minute, second, micros)
    return (local - offset).replace(tzinfo=datetime.timezone.utc)


def read_export(path):
    """`faresync export` lines as {path: data}."""
    documents = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            documents[entry["path"]] = entry["data"]
    return documents


def timestamp_members(path):
    """Which members of the document at `path` the mirror must type as timestamps:
    (top-level names, names inside travelRights[], names inside travelRights[].usedAccesses[])."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == "authUsers":
        return {"createdAt"}, set(), set()
    if len(parts) == 2 and parts[0] == "customers":
        return {"created"}, set(), set()
    if (len(parts) == 4 and parts[0] == "customers" and parts[2] == "fareContracts") or (len(parts) == 2 and parts[0] == "parkedFareContracts"):
        return CONTRACT_TIMES, RIGHT_TIMES, RIGHT_TIMES
    if len(parts) == 4 and parts[0] == "customers" and parts[2] == "reservations":
        return {"created"}, set(), set()
    return set(), set(), set()


def differences(expected, actual, where, times=(set(), set(), set()), level=0):
    """How a Firestore document (as the Python client returns it) differs from the store's JSON;
    members named in `times` must be datetimes at the same instant."""
    out = []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected a map, got {type(actual).__name__}"]
        if set(expected) != set(actual):
            out.append(f"{where}: members {sorted(expected)} != {sorted(actual)}")
        here = times[0] if level == 0 else times[level]
        for name in sorted(set(expected) & set(actual)):
            e, a = expected[name], actual[name]
            if name in here and instant(e) is not None:
                if not isinstance(a, datetime.datetime):
                    out.append(f"{where}.{name}: expected a timestamp, got {type(a).__name__} {a!r}")
                elif a != instant(e):
                    out.append(f"{where}.{name}: {a.isoformat()} != {e}")
            elif level == 0 and name == "travelRights" and isinstance(e, list):
                out += [d for i, (ei, ai) in enumerate(zip(e, a or [])) for d in differences(ei, ai, f"{where}.{name}[{i}]", times, 1)]
                if not isinstance(a, list) or len(a) != len(e):
                    out.append(f"{where}.{name}: {len(e)} elements, got {a!r}")
            elif level == 1 and name == "usedAccesses" and isinstance(e, list):
                out += [d for i, (ei, ai) in enumerate(zip(e, a or [])) for d in differences(ei, ai, f"{where}.{name}[{i}]", times, 2)]
                if not isinstance(a, list) or len(a) != len(e):
                    out.append(f"{where}.{name}: {len(e)} elements, got {a!r}")
            else:
                out += differences(e, a, f"{where}.{name}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {len(expected)} elements, got {actual!r}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in differences(e, a, f"{where}[{i}]")]
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return [] if type(actual) is type(expected) and actual == expected else [f"{where}: {actual!r} != {expected!r}"]
    if isinstance(expected, int):
        return [] if isinstance(actual, int) and not isinstance(actual, bool) and actual == expected else [f"{where}: {actual!r} != {expected!r} (integer)"]
    if isinstance(expected, float):
        if float(expected).is_integer() and isinstance(actual, int):
            return [] if actual == expected else [f"{where}: {actual!r} != {expected!r}"]
        return [] if isinstance(actual, float) and actual == expected else [f"{where}: {actual!r} != {expected!r} (double)"]
    return [f"{where}: unexpected {expected!r}"]
