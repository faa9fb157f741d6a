"""The user documentation holds together: every relative link of README.md and docs/*.md names a file that
exists, and every #anchor a heading of the page it points to (GitHub's rule: the heading's text in lower
case, punctuation dropped, spaces as hyphens, a repeated heading numbered -1, -2, ...); README.md is at
most 200 lines; and no user page speaks of "this machine" or of an issue by number (the docs describe the
machines figures come from, and say what holds, not which ticket asked for it).

usage: check_links.py SOURCE_ROOT   (exit 1 and one line per problem when any)"""
import os
import re
import sys

README_MAX_LINES = 200
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
# Phrases user pages must not carry: the machine a sentence was written on, and tracker numbers.
BANNED = [
    (re.compile(r"\bth(is|ese)\s+(\d+-core\s+)?machines?\b", re.I), "says 'this machine': name the machine"),
    (re.compile(r"\bissues?\s+#?\d+", re.I), "names an issue number"),
]


def prose_lines(path):
    """(number, line, in_code) for each line of a Markdown file."""
    in_code = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                in_code = not in_code
                yield number, line, True
                continue
            yield number, line, in_code


def slug(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading counts by its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # GitHub keeps letters, digits, '_', '-' and spaces
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    out = set()
    for _, line, in_code in prose_lines(path):
        if in_code:
            continue
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def check(root):
    problems = []
    pages = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    pages += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    cache = {}
    for page in pages:
        rel = os.path.relpath(page, root)
        for number, line, in_code in prose_lines(page):
            if in_code:
                continue
            code_free = re.sub(r"`[^`]*`", "", line)  # `code` (a log line, a link as text) is quoted, not said
            for pattern, why in BANNED:
                if pattern.search(code_free):
                    problems.append(f"{rel}:{number}: {why}: {line.strip()[:100]}")
            for target in LINK.findall(code_free):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
                    continue
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                if not os.path.exists(dest):
                    problems.append(f"{rel}:{number}: link to a missing file: {target}")
                    continue
                if anchor:
                    if not dest.endswith(".md"):
                        problems.append(f"{rel}:{number}: an anchor into a file that is not Markdown: {target}")
                        continue
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if anchor not in cache[dest]:
                        problems.append(f"{rel}:{number}: no heading for the anchor: {target}")
    with open(pages[0], encoding="utf-8") as f:
        count = sum(1 for _ in f)
    if count > README_MAX_LINES:
        problems.append(f"README.md: {count} lines, at most {README_MAX_LINES}")
    return problems


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    problems = check(root)
    for p in problems:
        print(p)
    print(f"check_links: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
