"""Every source file that a comment of the tree names exists: a comment that points at a file that was
renamed or removed (`gloo_pair_sockets.hpp`) sends its reader nowhere.

Reads the comments (// and #) of src/, include/, python/, tests/, bench/, examples/ and scripts/, takes every
word that ends in .hpp, .cpp, .h or .cc, and looks for a file of that name (its path's last parts) in the
tree. Names of system and third-party headers (<...> includes, gloo/, boost/, ...) are not ours to check.
usage: check_named_files.py SOURCE_ROOT   (exit 1 and one line per dangling name when any)"""
import os
import re
import sys

FOLDERS = ["src", "include", "python", "tests", "bench", "examples", "scripts"]
SUFFIXES = (".cpp", ".hpp", ".cc", ".h", ".py", ".sh", ".build")
NAME = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:hpp|cpp|h|cc))\b")
# Names in comments that are not files of this tree: other projects' sources and the system's headers.
FOREIGN = re.compile(r"^(gloo|boost|google|fmt|spdlog|nlohmann|CLI|doctest|sys|netinet|arpa|linux|pybind11|torch|"
                     r"asio|cuda|nccl|tcp|c10d?|ATen|uapi|include)/|^[a-z_]+\.h$|\.pb\.")  # plain x.h: system headers


def comments(path):
    """The comment text of a C++ or Python/shell/meson file, line by line, with line numbers."""
    hash_comments = path.endswith((".py", ".sh", ".build"))
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if hash_comments:  # a # that starts the line or follows a space (not one inside '#include')
                m = re.search(r"(^|\s)#", line)
                at = m.end() - 1 if m else -1
            else:
                at = line.find("//")
            if at >= 0:
                yield number, line[at:]


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    files = []
    for folder in FOLDERS:
        for base, _, names in os.walk(os.path.join(root, folder)):
            files += [os.path.relpath(os.path.join(base, n), root) for n in names]
    known = set(files)
    problems = []
    for rel in sorted(files):
        if not rel.endswith(SUFFIXES):
            continue
        for number, text in comments(os.path.join(root, rel)):
            for name in NAME.findall(text):
                if FOREIGN.search(name):
                    continue
                if not any(f == name or f.endswith("/" + name) for f in known):
                    problems.append("%s:%d: names %s, which is no file of the tree" % (rel, number, name))
    for p in problems:
        print(p)
    if problems:
        return 1
    print("ok: every file named in a comment exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
