#!/usr/bin/env python3
"""The layer order of docs/architecture.md, checked on every #include of the tree.

usage: check_layers.py SOURCE_ROOT

A folder of src/ includes only its own headers, those of folders below it, the public API
(include/shoal), the generated Protobuf headers (wire and above) and system headers. Two folders on
the same level never include each other (comm_wrap and ckpt_shm; launcher and ops). The sans-IO cores
(gossip, membership, ranks) and the health rule include no Asio, threads or sockets. A folder of tests/ tests the layer of
the same name and includes nothing above it; tests/integration and examples/ use only the public API.
Prints one line per violation and exits 1 when there is any, 0 otherwise.
"""
import os
import re
import sys

# Lowest first. Folders that share a level must not see each other.
LEVELS = [
    ['base'],
    ['wire'],
    ['gossip'],
    ['membership'],
    ['ranks'],
    ['comm_wrap', 'ckpt_shm', 'health'],
    ['net'],
    ['control'],
    ['ckpt_service'],
    ['daemon'],
    ['session'],
    ['launcher', 'ops'],
    ['cli'],
]
LEVEL = {folder: i for i, group in enumerate(LEVELS) for folder in group}
PROTO_FROM = LEVEL['wire']
SANS_IO = {'gossip', 'membership', 'ranks', 'health'}
SANS_IO_FORBIDDEN = re.compile(r'^(boost/asio|asio\.hpp|thread$|sys/socket\.h|netinet/|arpa/inet\.h|poll\.h|sys/epoll\.h)')

# Folders outside src/ and the layer they may reach (None: the public API only).
TEST_LEVEL = {
    'tests/sim': 'membership',     # the simulator runs the sans-IO cores alone
    'tests/support': 'control',    # helpers: processes, ports, a control-socket client
    'tests/gpu': 'session',
    'tests/fuzz': 'ops',           # each target fuzzes the decoder it includes; the highest: the config file
    'tests/lab': 'net',            # the lab's intruder speaks the agents' TCP channels as an outsider
    'bench': 'session',            # each benchmark measures the layer it includes
    'tests/integration': None,
    'examples': None,
    'python': None,                # the Python package binds the public API only
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def owner(rel):
    """(folder, level, layer): the folder a file belongs to, its level (None: the public API only) and the
    layer of src/ it stands for (its own for src/ folders; the tested one for tests/ and bench/)."""
    parts = rel.split('/')
    if parts[:2] == ['src', 'pch']:
        return 'pch', 'pch', None  # precompiled headers: a build aid, no layer; system headers only
    if parts[0] == 'src' and len(parts) > 2:
        return parts[1], LEVEL.get(parts[1], 'unknown'), parts[1]
    if parts[0] == 'tests' and len(parts) > 2:
        key = 'tests/' + parts[1]
        if key in TEST_LEVEL:
            lay = TEST_LEVEL[key]
            return key, (LEVEL[lay] if lay else None), lay
        if parts[1] in LEVEL:
            return key, LEVEL[parts[1]], parts[1]
        return key, 'unknown', None
    if parts[0] in TEST_LEVEL:
        lay = TEST_LEVEL[parts[0]]
        return parts[0], (LEVEL[lay] if lay else None), lay
    if parts[0] == 'include':
        return 'include', 'public', None
    return None, None, None


def target_of(root, rel, quote, name):
    """What an include names: ('src', folder), ('tests', path), ('public',), ('proto',) or None (system)."""
    here = os.path.dirname(rel)
    if quote == '"':
        local = os.path.normpath(os.path.join(here, name))
        if os.path.exists(os.path.join(root, local)) and not name.startswith(('shoal/',)):
            if local.startswith('src/'):
                return ('src', local.split('/')[1])
            if local.startswith('tests/'):
                return ('tests', local)
            return ('local', local)
    if name.startswith('shoal/'):
        return ('public',)
    if name.endswith('.pb.h'):
        return ('proto',)
    first = name.split('/')[0]
    if first in LEVEL and os.path.exists(os.path.join(root, 'src', name)):
        return ('src', first)
    return None


def check_file(root, rel):
    problems = []
    folder, level, layer = owner(rel)
    if folder is None:
        return problems
    with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
        lines = f.read().split('\n')
    for no, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        quote, name = m.group(1), m.group(2)
        where = f'{rel}:{no}: #include {quote}{name}{">" if quote == "<" else quote}'
        if folder in SANS_IO and SANS_IO_FORBIDDEN.match(name):
            problems.append(f'{where}: {folder} is a sans-IO core (no Asio, threads or sockets)')
            continue
        target = target_of(root, rel, quote, name)
        if level == 'pch':
            if target is not None and not (target[0] == 'src' and target[1] == 'pch'):
                problems.append(f'{where}: precompiled headers hold system headers only')
            continue
        if target is None or target[0] in ('public', 'local'):
            continue
        if level == 'public':
            problems.append(f'{where}: the public API includes only include/shoal and system headers')
            continue
        if target[0] == 'proto':
            if level is None or level == 'unknown' or level < PROTO_FROM:
                problems.append(f'{where}: the wire schema is for wire and the layers above it')
            continue
        if target[0] == 'tests':
            if target[1].startswith('tests/support/'):
                continue
            tfolder, tlevel, _ = owner(target[1])
            if tfolder == folder:
                continue
            if level is None or not isinstance(tlevel, int) or not isinstance(level, int) or tlevel > level:
                problems.append(f'{where}: test helpers of {tfolder} sit above {folder}')
            continue
        tfolder = target[1]
        tlevel = LEVEL[tfolder]
        if level is None:
            problems.append(f'{where}: {folder} uses only the public API (include/shoal), not src/{tfolder}')
        elif level == 'unknown':
            problems.append(f'{where}: {folder} is not a known test folder; name it after the layer it tests')
        elif tfolder == layer:
            continue
        elif tlevel > level:
            problems.append(f'{where}: {folder} includes {tfolder}, a layer above it')
        elif tlevel == level:
            problems.append(f'{where}: {folder} includes {tfolder}, a layer beside it')
    return problems


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().split('\n')[2], file=sys.stderr)
        return 2
    root = argv[1]
    problems = []
    checked = 0
    for top in ('src', 'include', 'tests', 'bench', 'examples', 'python'):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if not n.endswith(('.cpp', '.hpp', '.h', '.cc', '.in')):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, n), root)
                checked += 1
                problems += check_file(root, rel)
    for p in problems:
        print(p)
    if checked == 0:
        print(f'layering: no source files under {root}', file=sys.stderr)
        return 1
    print(f'layering: {checked} files, {len(problems)} include(s) against the layer order')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
