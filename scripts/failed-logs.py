#!/usr/bin/env python3
"""Why the failing tests failed, in a few lines each, for the end of scripts/test.sh's output.

meson prints a failing test's log when it fails, but in a run of a hundred tests that log scrolls far
above the summary that CI keeps. This reads meson's testlog.json files (one JSON object per test) and
prints, for every test that failed, timed out or passed unexpectedly, its result, duration and the lines
of its output most likely to say why: doctest's and pytest's failure lines first, then the last lines.

    scripts/failed-logs.py build/meson-logs/testlog.json [more testlog.json ...]

Prints nothing when nothing failed; a missing or unreadable file is named and skipped (exit 0 always:
the counting is scripts/test.sh's).
"""

import json
import re
import sys

FAILED = {"FAIL", "TIMEOUT", "UNEXPECTEDPASS", "ERROR"}
# Lines that usually say what went wrong: doctest's ERROR/CHECK lines with their values, pytest's E lines
# and summaries, Python tracebacks' last line, sanitizer reports, the agent's errors.
WHY = re.compile(r"ERROR|FATAL|values: |^E |AssertionError|Error:|error:|FAILED|Traceback|runtime error|Sanitizer|"
                 r"\bcritical\b|\berror\b \[")
MAX_TESTS = 6
WHY_LINES = 24
TAIL_LINES = 12
MAX_LINE = 300


def excerpt(entry):
    text = (entry.get("stdout") or "") + "\n" + (entry.get("stderr") or "")
    lines = [line[:MAX_LINE] for line in text.splitlines() if line.strip()]
    why = [line for line in lines if WHY.search(line)][:WHY_LINES]
    tail = [line for line in lines[-TAIL_LINES:] if line not in why]
    return why, tail


def main(paths):
    shown = 0
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                entries = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError) as e:
            print(f"failed-logs: cannot read {path}: {e}")
            continue
        for entry in entries:
            if entry.get("result") not in FAILED:
                continue
            shown += 1
            if shown > MAX_TESTS:
                print(f"failed-logs: more failures in {path}; see the file")
                return
            print(f"== why {entry.get('name')} failed: {entry.get('result')} after {entry.get('duration', 0):.2f} s"
                  f" (exit {entry.get('returncode')}; {path})")
            why, tail = excerpt(entry)
            for line in why:
                print("   " + line)
            if tail:
                print("   ... its last lines:")
                for line in tail:
                    print("   " + line)


if __name__ == "__main__":
    main(sys.argv[1:])
