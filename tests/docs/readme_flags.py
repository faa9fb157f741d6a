"""Every `shoal` command line in the README's shell blocks names a subcommand the program has and only
flags that subcommand's --help lists (a renamed or dropped flag breaks the README's commands: this says
which). Continued lines (a trailing backslash) are joined; what follows `--` is the worker's command.

usage: readme_flags.py SHOAL_BINARY SOURCE_ROOT   (exit 1 and one line per problem when any)"""
import re
import subprocess
import sys

FENCE = re.compile(r"^```(\w*)")
FLAG = re.compile(r"^--[a-z][a-z0-9-]*")


def shell_lines(readme):
    lines, block, lang = [], None, ""
    for raw in open(readme, encoding="utf-8"):
        m = FENCE.match(raw)
        if m:
            if block is None:
                block, lang = [], m.group(1)
            else:
                if lang == "sh":
                    lines.extend(join_continued(block))
                block = None
            continue
        if block is not None:
            block.append(raw.rstrip("\n"))
    return lines


def join_continued(block):
    out, cur = [], ""
    for line in block:
        cur += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            out.append(cur)
            cur = ""
    return out


def shoal_commands(line):
    """The argument lists after each `shoal` word of a command line (before a comment and a `--`)."""
    line = line.split(" #", 1)[0]
    out = []
    for part in re.split(r"&&|\|\||;|\|", line):
        words = part.split()
        for i, w in enumerate(words):
            if w == "shoal" or w.endswith("/shoal"):
                args = words[i + 1:]
                if "--" in args:
                    args = args[:args.index("--")]
                out.append(args)
                break
    return out


def main():
    shoal, root = sys.argv[1], sys.argv[2]
    problems, checked = [], 0
    helps = {}
    for line in shell_lines(root + "/README.md"):
        for args in shoal_commands(line):
            sub = args[0] if args and not args[0].startswith("-") else ""
            if sub not in helps:
                cmd = [shoal] + ([sub] if sub else []) + ["--help"]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
                helps[sub] = (r.returncode, r.stdout + r.stderr)
            rc, text = helps[sub]
            if rc != 0:
                problems.append("README: `shoal %s` is no subcommand (`shoal %s --help` exits %d)" % (sub, sub, rc))
                continue
            for a in args[1 if sub else 0:]:
                m = FLAG.match(a)
                if not m:
                    continue
                checked += 1
                if not re.search(r"(^|[\s,])" + re.escape(m.group(0)) + r"\b", text, re.M):
                    problems.append("README: `shoal %s` has no flag %s (line: %s)" % (sub, m.group(0), line.strip()))
    if checked == 0:
        problems.append("README: no `shoal` flag found to check: is the parser broken?")
    for p in problems:
        print(p)
    print("readme flags: %d flags checked, %d problems" % (checked, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
