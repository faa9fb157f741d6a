#!/usr/bin/python3
"""Kill one whole loopback host of an elastic PyTorch DDP job: shoal in place, shoal's restart mode and
torchrun, in one run.

Each system runs N loopback hosts, each a process in a session of its own. One loop shared by the three
systems, once the N hosts train in a world of N, repeats: SIGKILL every process of one host's session and
process tree at once; time until every survivor printed a good step (ok) in the world of N-1
(kill_to_step_ms, the slowest survivor's); start a fresh host under a new name (a shoal host seeds
through a live one); time until every host stepped in the world of N again (join_to_step_ms). Times: a
step line's `t` (the worker's wall clock when the step completed) minus the bench's wall clock just
before the SIGKILL. Shoal victims alternate the host of rank 0 and another.

elastic: examples/python/elastic_ddp.py (embedded agents named JOB-hK, Gloo underneath, rebuilt in
place; the output says hK). Counted over every line: ok=false, state_ok=false, a host's pid changing, a
step a host prints again. A join starts at the newcomer's "started" line (after its torch import).

restart: `shoal agent --name JOB-hK --host JOB-hK --bind 127.0.0.1:0 [--seeds LIVE] --min-hosts 2
--hold-down 1 --master-port MP -- python3 examples/python/ddp_flash.py` (the agent restarts its worker
at every view change; a new worker loads the flash checkpoint saved every step). Per kill: steps_lost =
S - the step each survivor's new worker loaded, S the newest step every survivor's old worker printed;
bad_loads: survivors that loaded nothing or parameters whose checksum differs from the one printed at
that step; the same for every host after the join (join_*); phases_ms: milestones after the SIGKILL,
the slowest survivor's, from the agents' logs (victim suspect, dead, view commit, old worker stopped,
new one spawned), the worker's torch log (TORCH_CPP_LOG_LEVEL=INFO; store_listening: rank 0's TCPStore
listens, after python's start and the imports; store_connected: a worker's first connection to it,
torch 1.13 retrying a refused connect once a second; both null while ddp_flash.py bootstraps from the
agents' store, its default --store view, which has no TCPStore), its shoal log (comm_ready: the checkpoint
communicator, built in load(); restored) and its lines (load, first_step). A join starts at the
newcomer's "listening" line. Workers restart here by design: counted (workers_restarted).

torchrun: the same model, data, sampler rule and per-step work (a sleep of --step-ms, an allreduce of a
parameter hash, the DDP step) in a plain DDP script with env:// init (this file's --worker mode), under
N of Debian's torchrun agents (--nnodes=N-1:N, --nproc_per_node=1, c10d rendezvous, default timeouts).
The first agent hosts the c10d TCPStore, torchrun's single point of failure: never killed. Its workers
keep no checkpoint: a restarted worker starts from step 0. A join starts at the spawn. Debian's torchrun
1.13 under Python 3.11 crashes on its --redirects/--tee values (Std.from_str returns None for 0, the
default, and 3: iterating an IntFlag in 3.11 skips 0 and multi-bit members); the agents run through
this file's --torchrun-agent mode, which replaces Std.from_str with a working parser.

One JSON line per kill and a summary per system (torchrun's with the ratio of its kill p50 to each shoal
system's) on stdout; progress on stderr.

With --torchrun-launch-only, torchrun's N hosts start and train in a world of N, and nothing is killed
(a torchrun kill costs about 45 s of its default timeouts): its summary says kills 0, a ratio of {}. The
bench suite's smoke run (tests/bench) uses it.

usage: torch_elastic_bench.py [--system both|elastic|restart|torchrun|all] [--hosts 4] [--kills 6]
                              [--torchrun-kills 2] [--torchrun-launch-only] [--step-ms 20] [--skip-torchrun]
                              [--build DIR] [--keep-logs]

The parts live in files of their own beside this one: torch_elastic_hosts.py (a loopback host),
torch_elastic_loop.py (System, the kill/join loop), torch_elastic_shoal.py (elastic, restart) and
torch_elastic_torchrun.py (torchrun, and this file's --worker and --torchrun-agent modes).
"""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile

import torch_elastic_hosts as teh  # teh.PY: the interpreter the hosts run, set here from --python
from torch_elastic_hosts import REPO, log
from torch_elastic_loop import run_system
from torch_elastic_shoal import Elastic, Restart
from torch_elastic_torchrun import Torchrun, torchrun_agent_main, worker_main


SYSTEMS = {"both": ["elastic", "torchrun"], "all": ["elastic", "restart", "torchrun"], "elastic": ["elastic"],
           "restart": ["restart"], "torchrun": ["torchrun"]}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torchrun-agent":
        return torchrun_agent_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker_main(int(sys.argv[sys.argv.index("--step-ms") + 1]) if "--step-ms" in sys.argv else 0)
    ap = argparse.ArgumentParser(description=__doc__.split("\nusage:")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Internal modes (the bench starts "
                                 "them itself): --torchrun-agent TORCHRUN_ARGS..., --worker [--step-ms MS].")
    ap.add_argument("--system", choices=sorted(SYSTEMS), default="both",
                    help="both: elastic and torchrun (default); all: elastic, restart and torchrun")
    ap.add_argument("--hosts", type=int, default=4, help="loopback hosts for each system (default 4)")
    ap.add_argument("--kills", type=int, default=6, help="shoal kills, alternating rank 0's host and another (default 6)")
    ap.add_argument("--torchrun-kills", type=int, default=2, help="torchrun kills, never the store's host (default 2)")
    ap.add_argument("--torchrun-launch-only", action="store_true",
                    help="torchrun: start the hosts and wait until they train together, kill nothing (a smoke run)")
    ap.add_argument("--step-ms", type=int, default=20, help="sleep per step, the 'compute' (default 20)")
    ap.add_argument("--skip-torchrun", action="store_true", help="leave torchrun out of --system")
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="shoal's build dir (default REPO/build)")
    ap.add_argument("--keep-logs", action="store_true", help="keep the hosts' stderr logs (always kept on failure)")
    ap.add_argument("--python", default=teh.PY, help="the interpreter (and so the torch) every worker and agent runs "
                    "(default %s, Debian's, with torch 1.13; e.g. a virtual environment's with torch 2.13.0)" % teh.PY)
    a = ap.parse_args()
    teh.PY = a.python
    if a.hosts < 3 or a.kills < 0 or a.torchrun_kills < 0 or a.step_ms < 0:
        ap.error("--hosts takes at least 3 (min hosts 2; torchrun's --nnodes N-1:N); counts are non-negative")
    names = [s for s in SYSTEMS[a.system]
             if not (s == "torchrun" and (a.skip_torchrun or not (a.torchrun_kills or a.torchrun_launch_only)))]
    job = "tebench%d" % os.getpid()
    logdir = tempfile.mkdtemp(prefix="shoal-torch-elastic-bench-")
    log("logs in %s" % logdir)
    summaries, systems, failed = [], [], True
    try:
        for name in names:
            sys_ = (Torchrun(a, logdir, job, summaries) if name == "torchrun"
                    else (Elastic if name == "elastic" else Restart)(a, logdir, job + name[0]))
            systems.append(sys_)
            summary = run_system(sys_)
            for h in sys_.procs:
                h.kill()
            summaries.append(summary)
            print(json.dumps(summary), flush=True)
        failed = False
    finally:
        for h in (h for s in systems for h in s.procs):
            h.kill()
        for path in glob.glob("/dev/shm/shoal.%s*" % job) + glob.glob("/run/shoal/%s*-h*.sock" % job):
            try:
                os.unlink(path)
            except OSError:
                pass
        if failed or a.keep_logs:
            log("logs kept in %s" % logdir)
        else:
            shutil.rmtree(logdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
