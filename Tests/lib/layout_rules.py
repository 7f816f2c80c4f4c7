"""The layout's mechanical rules, checked over the tree:

- no Swift file over 400 lines, and no function, initializer, deinitializer, subscript or computed
  property body over 60 lines (counted from the line of its declaration to its closing brace; braces inside multi-line
  and raw string literals are not told apart from code);
- no citation of the specification by section sign or number anywhere (the reference is cited
  by its headings: docs/reference.md#…);
- README.md at most 250 lines, none of them over 160 characters outside code blocks;
- every relative link in README.md and docs/*.md names a file that exists and, with a #fragment,
  a heading of that file (GitHub's anchors: lowercased, punctuation dropped, spaces to hyphens);
- no build output committed (.build, .build-*, __pycache__, *.pyc).

Prints each breach as `path:line: what` and exits 1 when there is any. `make lint` runs it.

Usage: python3 Tests/lib/layout_rules.py [ROOT]
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
MAX_FILE, MAX_FUNCTION, MAX_README, MAX_LINE = 400, 60, 250, 160
# A citation of the specification by section sign or number; spelled with an escape, so that this
# file does not cite what it looks for.
SECTION_CITATION = re.compile("SPEC (\u00a7|[0-9])")
breaches = []


def files_of_the_tree():
    """The files git tracks, and the new ones it would (not ignored), so that a file is checked before it is added."""
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard"], capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if os.path.exists(os.path.join(ROOT, p))]


DECLARATION = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|private|fileprivate|static|final|"
                         r"override|mutating|nonisolated|convenience|required|class|@inlinable|@usableFromInline)\s+)*"
                         r"(?:func\s|init[?!]?\s*[(<]|deinit\b|subscript\s*[(<]|var\s+\w+\s*:[^=]*\{\s*$)")


def code_only(line):
    """The line without string literals' contents and without a trailing // comment."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def function_lengths(path, lines):
    index = 0
    while index < len(lines):
        if DECLARATION.match(lines[index]) and not lines[index].lstrip().startswith("//"):
            depth, opened, end = 0, False, index
            for end in range(index, len(lines)):
                code = code_only(lines[end])
                depth += code.count("{") - code.count("}")
                opened = opened or "{" in code
                if opened and depth <= 0:
                    break
                if not opened and end > index and (code.strip() == "" or DECLARATION.match(lines[end])):
                    break  # a requirement without a body
            if opened and end - index + 1 > MAX_FUNCTION:
                name = lines[index].strip()[:70]
                breaches.append(f"{path}:{index + 1}: {end - index + 1} lines in `{name}` (at most {MAX_FUNCTION})")
        index += 1


def anchor(heading):
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    found, code = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            code = not code
        elif not code and line.startswith("#"):
            base = anchor(line.lstrip("#"))
            name, n = base, 1
            while name in found:
                name, n = f"{base}-{n}", n + 1
            found.add(name)
    return found


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def links(path):
    code = False
    for number, line in enumerate(open(os.path.join(ROOT, path), encoding="utf-8"), 1):
        if line.startswith("```"):
            code = not code
            continue
        if code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, fragment = target.partition("#")
            resolved = os.path.normpath(os.path.join(ROOT, os.path.dirname(path), file)) if file else os.path.join(ROOT, path)
            if not os.path.exists(resolved):
                breaches.append(f"{path}:{number}: the link {target} names no file")
            elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                breaches.append(f"{path}:{number}: the link {target} names no heading of {os.path.relpath(resolved, ROOT)}")


files = files_of_the_tree()
for path in files:
    if re.search(r"(^|/)(\.build[^/]*|__pycache__)/|\.pyc$", path):
        breaches.append(f"{path}:1: build output is in the tree (committed or not ignored)")
    if path.endswith(".swift"):
        lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
        if len(lines) - 1 > MAX_FILE:
            breaches.append(f"{path}:1: {len(lines) - 1} lines (at most {MAX_FILE})")
        function_lengths(path, lines)
    if path.endswith((".swift", ".md", ".py", ".sh", ".json", "Makefile")):
        try:
            text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.split("\n"), 1):
            if SECTION_CITATION.search(line):
                breaches.append(f"{path}:{number}: a citation by section number (cite docs/reference.md#heading)")
readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().split("\n")
if len(readme) - 1 > MAX_README:
    breaches.append(f"README.md:1: {len(readme) - 1} lines (at most {MAX_README})")
code = False
for number, line in enumerate(readme, 1):
    if line.startswith("```"):
        code = not code
    elif not code and len(line) > MAX_LINE:
        breaches.append(f"README.md:{number}: {len(line)} characters (at most {MAX_LINE} outside code)")
for path in files:
    if path == "README.md" or (path.startswith("docs/") and path.endswith(".md")):
        links(path)
for breach in breaches:
    print(breach)
print(f"layout rules: {len(files)} files, {len(breaches)} breaches")
sys.exit(1 if breaches else 0)
