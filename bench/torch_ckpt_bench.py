#!/usr/bin/python3
"""shoal.torch.Checkpointer against same-run baselines: save, load, peer load, and saving every step.

usage: bench/torch_ckpt_bench.py [--bytes 1G] [--runs 5] [--skip-training]
       (with this build's package: PYTHONPATH=build/python /usr/bin/python3 bench/torch_ckpt_bench.py)

1. One host, this process, an embedded session: a state of --bytes in a realistic mix (a mixed-precision
   model: bf16 weights, fp32 master weights, Adam's fp32 exp_avg and exp_avg_sq and step, a few hundred
   tensors) saved with Checkpointer.save. Each repetition runs, interleaved so that noise hits all of
   them: a plain copy of the same bytes into one pre-faulted buffer (ctypes.memmove per tensor,
   memcpy_s), a steady-state save (save_s, after two warm-up saves: the first save of a size faults
   fresh shared memory in and is reported apart as save_cold_s), load(into=state) into the existing
   tensors (load_into_s), load() into new tensors (load_new_s) and torch.save of the state to a file in
   /dev/shm (torch_save_s). Then a few more saves and loads with the package's calls timed stage by
   stage (lines with "profile").
2. Two hosts, two processes on loopback, replication off (ckpt_replicas=0): host b loads host a's
   version with Session.restore_into(saved_rank=a's rank) into its own existing tensors, as
   load(into=) does, which must fetch it from host a's agent over TCP (peer_load_s); alternated with a
   raw TCP stream of the same bytes from a to b over one loopback connection, received straight into
   the same pre-faulted tensors (tcp_s).
3. Saving every step in training: 2 DDP ranks as 2 processes (Gloo over loopback, one torch thread
   each, each with an embedded session), an MLP and Adam whose state is ~100 MB per rank, the batch
   calibrated at start (under the load of the moment) so that the DDP step -- forward, backward with
   its gradient allreduce, Adam -- takes ~--step-ms. Blocks of --block-steps steps
   with no save and with a save after every step alternate (--runs blocks of each, the first step of
   every block dropped); once with replication off, once with one replica on the peer (the default),
   and once with replication off and save(..., fence=optimizer), which copies the optimizer's tensors
   on a thread while the next step computes (its step() waits for the copy).
   step_overhead[_replicated|_fenced]_pct = (median step with a save - median step without) / without
   * 100, over both ranks' steps.

Every ratio is the ratio of two medians of --runs repetitions measured in the same run. Output: one JSON
object per line on stdout (inputs, medians in seconds, the figure, its target from issue 23 and whether
it is met); progress on stderr. A benchmark never fails a build: it exits non-zero only when it could
not measure.

The parts live in files of their own beside this one: torch_ckpt_local.py (1), torch_ckpt_peer.py (2),
torch_ckpt_training.py (3), the state (torch_ckpt_state.py), the stage profiler (torch_ckpt_profile.py),
the worker processes and sessions (torch_ckpt_processes.py) and the output (torch_ckpt_report.py).
"""
import argparse
import json
import os
import re
import sys
import tempfile

import torch

import shoal

from torch_ckpt_local import bench_local
from torch_ckpt_peer import bench_peer, peer_worker
from torch_ckpt_processes import JOB_PREFIX, Child, remove_segments, remove_stale_segments
from torch_ckpt_report import emit, log
from torch_ckpt_training import bench_training, train_worker


def parse_bytes(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGkmg]?)(?:i?[Bb])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError("a size like 1G, 256M or 1048576, not %r" % text)
    return int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", type=parse_bytes, default=1 << 30,
                    help="size of the state for save/load/peer load, e.g. 1G, 256M (default 1G)")
    ap.add_argument("--runs", type=int, default=5,
                    help="repetitions behind every median, and training blocks of each kind (default 5, at least 5 "
                         "for the issue's figures)")
    ap.add_argument("--skip-training", action="store_true", help="skip the two DDP training runs (part 3)")
    ap.add_argument("--skip-peer", action="store_true", help="skip the two-host peer load (part 2)")
    ap.add_argument("--step-ms", type=float, default=200.0,
                    help="training: the DDP step (forward, backward, allreduce, Adam) the batch is calibrated to "
                         "(default 200)")
    ap.add_argument("--width", type=int, default=2048,
                    help="training: MLP width; 2048 gives 8.4 M parameters, 100 MB of state with Adam (default 2048)")
    ap.add_argument("--block-steps", type=int, default=6,
                    help="training: steps per block, the first dropped (default 6)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        (peer_worker if spec["role"] == "peer" else train_worker)(spec)
        return 0
    if args.runs < 1 or args.block_steps < 2:
        ap.error("--runs must be at least 1 and --block-steps at least 2")
    torch.set_num_threads(1)
    remove_stale_segments()
    job = "%s%d" % (JOB_PREFIX, os.getpid())
    logdir = tempfile.mkdtemp(prefix="shoal-torch-ckpt-bench-")
    emit({"bench": "torch_ckpt_bench", "bytes": args.bytes, "runs": args.runs, "cpus": os.cpu_count(),
          "torch": torch.__version__, "shoal": shoal.__version__, "loadavg": [round(x, 2) for x in os.getloadavg()]})
    try:
        bench_local(args, job + "-solo")
        if not args.skip_peer:
            bench_peer(args, job + "-peer", logdir)
        if not args.skip_training:
            bench_training(args, job + "-train0", logdir, 0)
            bench_training(args, job + "-train1", logdir, 1)
            bench_training(args, job + "-train2", logdir, 0, fence=True)
    except (RuntimeError, shoal.Error) as e:
        log("failed: %s (children's logs in %s)" % (e, logdir))
        return 1
    finally:
        Child.kill_all()
        remove_segments("shoal.%s*" % job)
        remove_segments("%s*" % job)
    log("done (children's logs in %s)" % logdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
