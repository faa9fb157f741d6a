"""Part 2 of torch_ckpt_bench.py, two hosts on loopback with replication off: host b loads host a's version
from a's agent over TCP (peer_load_s), alternated with a raw TCP stream of the same bytes (tcp_s).
peer_worker is one host's process (torch_ckpt_bench.py --worker); bench_peer runs both and reports.
"""
import socket

import torch

import shoal.torch
from shoal.torch import placement as _placement

from torch_ckpt_processes import Child, remove_segments, start_session
from torch_ckpt_report import emit, figure, log, median, now, rounded
from torch_ckpt_state import bytes_view, make_state, nbytes_of, tensors_of


def peer_worker(spec):
    """Host a saves the big state and streams it; host b times loads of a's version and the stream."""
    torch.set_num_threads(1)
    a = spec["host"] == "a"
    if a:
        listener = socket.create_server(("127.0.0.1", 0))
        emit({"tcp_port": listener.getsockname()[1]})
    s = start_session(spec["job"], spec["host"], 0, spec.get("seed"), 2, announce=a)
    try:
        ck = shoal.torch.Checkpointer(s, safe_timeout=0)
        comm = ck.communicator()
        other = 1 - comm.rank
        state = make_state(spec["bytes"], fill=a)
        tensors = tensors_of(state)
        total = sum(nbytes_of(t) for t in tensors)
        if a:
            ck.save(1, state)
            conn, _ = listener.accept()
        else:
            ck.save(1, {"tiny": torch.zeros(1)})  # the step must be complete: every rank saved it
            conn = socket.create_connection(("127.0.0.1", spec["tcp_port"]))
        for r in range(spec["runs"] + 1):  # the first of each is a warm-up
            if a:
                if conn.recv(1) != b"g":
                    raise RuntimeError("the TCP peer went away")
                for t in tensors:
                    conn.sendall(bytes_view(t))
                s.restore_into(comm, lambda layout: [None] * len(layout.entries), saved_rank=comm.rank)
                continue
            t0 = now()
            conn.sendall(b"g")
            for t in tensors:
                view, got = bytes_view(t), 0
                while got < len(view):
                    n = conn.recv_into(view[got:], len(view) - got)
                    if n == 0:
                        raise RuntimeError("the TCP peer closed the stream")
                    got += n
            tcp = now() - t0
            marks, plan = {}, {}

            def place(layout):
                marks["in"] = now()
                plan["p"] = _placement.Plan(layout.first, [size for _, _, size in layout.entries[1:]], state,
                                            "rank %d's version" % other)
                marks["out"] = now()
                return [None] + plan["p"].destinations
            t0 = now()
            restored = s.restore_into(comm, place, saved_rank=other)
            t1 = now()
            plan["p"].finish()
            t2 = now()
            if restored.source == "local":
                raise RuntimeError("rank %d's version was found in this host's memory, not fetched" % other)
            if r:
                emit({"tcp_s": tcp, "peer_load_s": t2 - t0, "agree_and_fetch_s": marks["in"] - t0,
                      "plan_s": marks["out"] - marks["in"], "copy_out_and_agree_s": t1 - marks["out"],
                      "finish_s": t2 - t1, "cpp_seconds": restored.seconds, "bytes": total,
                      "tensors": len(tensors), "source": restored.source})
        # Neither leaves while the other may still be in the last restore (served by rank 0's agent).
        if a:
            conn.recv(1)
        else:
            conn.sendall(b"x")
        conn.close()
    finally:
        s.leave()
    emit({"done": True})


def bench_peer(args, job, logdir):
    log("two hosts: starting them (replication off)")
    spec = {"role": "peer", "job": job, "bytes": args.bytes, "runs": args.runs}
    a = Child(dict(spec, host="a"), logdir, "peer-a")
    port = a.line(120)["tcp_port"]
    b = Child(dict(spec, host="b", seed=a.line(120)["addr"], tcp_port=port), logdir, "peer-b")
    rows = []
    while True:
        doc = b.line(600)
        if doc.get("done"):
            break
        rows.append(doc)
        log("two hosts: repetition %d of %d: tcp %.3f s, peer load %.3f s" % (
            len(rows), args.runs, doc["tcp_s"], doc["peer_load_s"]))
    a.line(120)
    a.finish()
    b.finish()
    remove_segments("shoal.%s*" % job)
    m = {k: median([r[k] for r in rows]) for k in rows[0] if isinstance(rows[0][k], float)}
    inputs = {"bytes": rows[0]["bytes"], "tensors": rows[0]["tensors"], "runs": len(rows)}
    figure("peer_load_vs_tcp", m["peer_load_s"] / m["tcp_s"], **inputs, peer_load_s=m["peer_load_s"],
           tcp_s=m["tcp_s"], tcp_gbps=round(inputs["bytes"] / m["tcp_s"] / 1e9, 3), source=rows[0]["source"])
    emit(dict(profile="peer_load", **inputs, **rounded({k: v for k, v in m.items() if k not in ("tcp_s",)})))
