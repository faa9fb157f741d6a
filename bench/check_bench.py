#!/usr/bin/python3
"""`shoal check` on loopback: its wall time for N agents (the issue's bound: <= 10 s for 8 hosts with the
default sizes), the link bandwidth it reports, and the raw TCP baseline of the same run.

Starts N `shoal agent` processes on 127.0.0.1 (keyed with a fresh cluster key unless --insecure, so the
link probes are sealed as in production), waits for one committed view of all N, then runs
`shoal check --json` R times against the first agent and reports the median wall time of the command, the
agent's own elapsed_ms, and the median link bandwidth the check measured. The baseline, measured right
after in the same run: plain TCP on loopback (Python sockets, no sealing), the same byte count per stream,
once with one stream and once with N/2 streams at once (a round of link probes runs N/2 pairs at once).

One JSON line per result.
usage: bench/check_bench.py BUILD_DIR [--hosts 8] [--runs 5] [--bytes 64M] [--insecure]
"""
import argparse, json, os, socket, statistics, subprocess, sys, tempfile, threading, time


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def start_agents(shoal, hosts, tmp, key_file):
    procs, names, seed = [], [], None
    for i in range(hosts):
        name = "c%d" % i
        argv = [shoal, "agent", "--no-slurm", "--name", name, "--bind", "127.0.0.1:0", "--cluster",
                "check-bench-%d" % os.getpid(), "--job", "check-bench-%d" % os.getpid(), "--control",
                os.path.join(tmp, name + ".sock"), "--min-hosts", str(hosts)]
        argv += ["--key-file", key_file] if key_file else ["--insecure"]
        if seed:
            argv += ["--seeds", seed]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, name + ".log"), "w"),
                             text=True)
        line = p.stdout.readline().split()  # shoal agent NAME listening on ADDR control PATH
        seed = seed or line[5]
        procs.append(p)
        names.append(name)
    return procs, names


def view_size(shoal, control):
    p = subprocess.run([shoal, "view", "--control", control, "--json"], capture_output=True, text=True, timeout=5)
    if p.returncode != 0:
        return 0
    return len(json.loads(p.stdout).get("members", []))


def tcp_streams(streams, nbytes):
    """Gb/s of each of `streams` plain TCP streams on loopback sending `nbytes` at once."""
    chunk = b"\x5a" * (4 << 20)
    results = [0.0] * streams
    servers = []
    for _ in range(streams):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        servers.append(s)

    def receive(srv):
        conn, _ = srv.accept()
        got = 0
        while got < nbytes:
            data = conn.recv(1 << 20)
            if not data:
                break
            got += len(data)
        conn.sendall(b"k")
        conn.close()

    def send(i):
        c = socket.create_connection(servers[i].getsockname())
        start = time.monotonic()
        sent = 0
        while sent < nbytes:
            n = min(len(chunk), nbytes - sent)
            c.sendall(chunk[:n])
            sent += n
        c.recv(1)
        results[i] = nbytes * 8 / (time.monotonic() - start) / 1e9
        c.close()

    threads = [threading.Thread(target=receive, args=(s,)) for s in servers]
    threads += [threading.Thread(target=send, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in servers:
        s.close()
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bytes", default="64M")
    ap.add_argument("--insecure", action="store_true")
    args = ap.parse_args()
    shoal = os.path.join(args.build, "shoal")
    nbytes = parse_size(args.bytes)
    with tempfile.TemporaryDirectory() as tmp:
        key_file = None
        if not args.insecure:
            key_file = os.path.join(tmp, "cluster.key")
            subprocess.run([shoal, "keygen", "--output", key_file], check=True, capture_output=True)
        procs, names = start_agents(shoal, args.hosts, tmp, key_file)
        control = os.path.join(tmp, names[0] + ".sock")
        try:
            deadline = time.monotonic() + 60
            while view_size(shoal, control) != args.hosts:
                if time.monotonic() > deadline:
                    print(json.dumps({"bench": "check", "error": "no view of all hosts within 60 s"}))
                    return 1
                time.sleep(0.2)
            walls, elapsed, gbps, gflops, flagged = [], [], [], [], []
            for _ in range(args.runs):
                start = time.monotonic()
                p = subprocess.run([shoal, "check", "--control", control, "--json", "--bytes", args.bytes],
                                   capture_output=True, text=True, timeout=120)
                walls.append(time.monotonic() - start)
                if p.returncode != 0:
                    print(json.dumps({"bench": "check", "error": p.stderr.strip()}))
                    return 1
                doc = json.loads(p.stdout)
                elapsed.append(doc["elapsed_ms"])
                gbps.append(doc["median_gbps"] or 0)
                gflops.append(doc["median_gflops"] or 0)
                flagged.append(doc["flagged"])
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        one = tcp_streams(1, nbytes)
        many = tcp_streams(max(1, args.hosts // 2), nbytes)
    print(json.dumps({
        "bench": "check", "hosts": args.hosts, "keyed": not args.insecure, "bytes_per_link": nbytes,
        "runs": args.runs, "wall_s_median": round(statistics.median(walls), 3),
        "wall_s": [round(w, 3) for w in walls], "agent_elapsed_ms_median": round(statistics.median(elapsed), 1),
        "link_gbps_median": round(statistics.median(gbps), 2), "gflops_median": round(statistics.median(gflops), 1),
        "flagged": flagged,
        "baseline_tcp_gbps_1_stream": round(one[0], 2),
        "baseline_tcp_gbps_per_stream_%d_at_once" % len(many): round(statistics.median(many), 2),
        "bound_s": 10,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
