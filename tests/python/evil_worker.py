"""One host of test_no_code_from_bytes.py: an embedded session that saves a good step, then plants a state
structure whose unpickling would run a command (`touch MARKER`), and loads or hands over state.

    evil_worker.py MODE NAME PORT SEED JOB MARKER [KEYFILE|-] [CKPTDIR|-]

MODE: replica  -- both hosts save a good step 1 and an evil step 2 (replicated to the other host), then load
                  saved rank 0's version together: one from its own memory, one from the other's replica;
      persist  -- save good 1, evil 2 into --ckpt-dir, wait until they are persisted, leave (one host);
      reload   -- a fresh agent over the same --ckpt-dir loads (one host);
      handover -- rank 0 hands a state over with state_sync.broadcast_state, but the skeleton it sends
                  would run a command ("forged": plainly; "tampered": the seal of a good skeleton sent
                  with an evil one, as an attacker on the path would).
Prints JSON lines: {"name", "event": "loaded", "step", "source"} or {"event": "refused", "error"}."""
import json
import os
import pickle
import sys

import torch

import shoal
import shoal.torch
from shoal.torch import state_sync


class RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch %s" % self.marker,))


def emit(**doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def evil_skeleton(marker):
    # The shape of a real skeleton (format 1, tree, records, storages) with a payload where the tree goes.
    return pickle.dumps((1, {"model": RunsACommand(marker)}, [], []), protocol=pickle.HIGHEST_PROTOCOL)


def plant(session, comm, step, marker):
    skeleton = evil_skeleton(marker)
    save = session.begin_save(comm, step, [("meta", len(skeleton)), ("s0", 16)])
    save.write("meta", skeleton)
    save.write("s0", bytes(16))
    save.commit()


def main():
    mode, name, port, seed, job, marker = sys.argv[1:7]
    key = sys.argv[7] if len(sys.argv) > 7 and sys.argv[7] != "-" else ""
    ckpt_dir = sys.argv[8] if len(sys.argv) > 8 and sys.argv[8] != "-" else ""
    world = 2 if mode in ("replica", "handover") else 1
    session = shoal.Session.start(name=name, host=name, bind="127.0.0.1:%s" % port,
                                  seeds=[seed] if seed != "-" else [], cluster=job, job=job, min_hosts=world,
                                  control_path="none", log_spec="error", key_file=key, insecure=not key,
                                  ckpt_dir=ckpt_dir)
    ckpt = shoal.torch.Checkpointer(session, safe_timeout=30)
    comm = ckpt.communicator()
    good = {"model": {"w": torch.arange(4, dtype=torch.float32) + comm.rank}, "step": 1}
    if mode in ("replica", "persist"):
        ckpt.save(1, good)
        if not ckpt.wait(30):  # replicated and persisted: the persister queues only a rank's newest step
            emit(name=name, event="not_safe")
        plant(session, comm, 2, marker)
        ckpt.last_saved = 2
        if not ckpt.wait(30):
            emit(name=name, event="not_safe")
    if mode == "replica":
        got = ckpt.load(saved_rank=0)
        emit(name=name, event="loaded", step=got[0], source=ckpt.last_load.source,
             w=got[1]["model"]["w"].tolist())
    elif mode == "reload":
        got = ckpt.load()
        emit(name=name, event="loaded", step=got[0] if got else None,
             source=ckpt.last_load.source if got else None, w=got[1]["model"]["w"].tolist() if got else None)
    elif mode == "handover":
        how = os.environ.get("HANDOVER", "forged")
        if comm.rank == 0:
            real = state_tree_flatten(good)
            seal = session.state_seal(comm, 0, real)
            sent = evil_skeleton(marker)
            state_sync._broadcast_bytes(comm, sent, 0)
            state_sync._broadcast_bytes(comm, seal if how == "tampered" else session.state_seal(comm, 0, sent), 0)
            state_sync._agree(comm, True)
            emit(name=name, event="sent", how=how)
        else:
            try:
                state_sync.broadcast_state(comm, {"model": {"w": torch.zeros(4)}, "step": 0}, 0, session=session)
                emit(name=name, event="adopted")
            except ValueError as e:
                emit(name=name, event="refused", error=str(e))
    if world > 1:
        comm.barrier()  # nobody leaves (ending the view's store) while another still reads it
    ckpt.close()
    session.leave()


def state_tree_flatten(state):
    from shoal.torch import state_tree
    return state_tree.flatten(state).skeleton


if __name__ == "__main__":
    main()
