"""Trains from a `pip install .` of shoal, in the virtual environment that runs this file (scripts/test.sh's
pip stage): two hosts, each a process with its own embedded agent, build the process group with
shoal.torch.init_process_group(), train a DDP model for a few steps with a flash checkpoint every step, and
load the last one back; the `shoal` program is on the environment's PATH. Exits 0 and prints
"pip install: ok ..." when all of it worked, else says what did not."""
import json
import os
import shutil
import socket
import subprocess
import sys

CHILD = r'''
import json, sys, torch, torch.distributed as dist
import shoal, shoal.torch
rank, port0, job = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
session = shoal.Session.start(insecure=True, name="h%d" % rank, host="h%d" % rank, bind="127.0.0.1:%d" % (port0 + rank),
                              seeds=[] if rank == 0 else ["127.0.0.1:%d" % port0], cluster=job, job=job, min_hosts=2,
                              control_path="none", log_spec="warn")
shoal.torch.init_process_group(session)
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
model = torch.nn.parallel.DistributedDataParallel(net)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ckpt = shoal.torch.Checkpointer(session)
for step in range(5):
    g = torch.Generator().manual_seed(step * 7 + rank)
    loss = torch.nn.functional.mse_loss(model(torch.randn(4, 8, generator=g)), torch.randn(4, 2, generator=g))
    opt.zero_grad(); loss.backward(); opt.step()
    ckpt.save(step, {"model": net.state_dict(), "step": step})
step, state = ckpt.load(into={"model": net.state_dict(), "step": 0})
print(json.dumps({"rank": rank, "loaded": step, "loss": float(loss), "module": shoal.__file__, "torch": torch.__version__,
                  "same": all(torch.equal(a, b) for a, b in zip(state["model"].values(), net.state_dict().values()))}))
ckpt.close()
dist.destroy_process_group()
session.leave()
'''


def free_port_block(n):
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n < 65000:
            return base
    raise RuntimeError("no free ports")


def main():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SHOAL_BUILD_DIR")}
    env["SHOAL_LOG"] = "warn"
    # The package must come from the environment's site-packages, never from the source tree or a build dir.
    where = subprocess.run([sys.executable, "-c", "import shoal; print(shoal.__file__)"], cwd="/", env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    site = os.path.join(sys.prefix, "lib")
    if where.returncode != 0 or not os.path.abspath(where.stdout.strip()).startswith(site) \
            or "site-packages" not in where.stdout:
        sys.exit("pip install: shoal is not imported from the environment's site-packages: %s%s"
                 % (where.stdout, where.stderr))
    program = shutil.which("shoal", path=os.path.dirname(sys.executable))
    if program is None:
        sys.exit("pip install: no `shoal` program in %s" % os.path.dirname(sys.executable))
    version = subprocess.run([program, "--version"], stdout=subprocess.PIPE, text=True, check=True).stdout.splitlines()[0]
    port0 = free_port_block(3)
    job = "pipck%d" % os.getpid()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(r), str(port0), job], cwd="/", env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    rows = []
    for r, p in enumerate(procs):
        out, err = p.communicate(timeout=300)
        if p.returncode != 0:
            for q in procs:
                if q.poll() is None:
                    q.kill()
            sys.exit("pip install: rank %d exited %d:\n%s" % (r, p.returncode, err[-4000:]))
        rows += [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    for f in os.listdir("/dev/shm"):
        if f.startswith("shoal." + job):
            os.unlink(os.path.join("/dev/shm", f))
    if len(rows) != 2 or any(r["loaded"] != 4 or not r["same"] for r in rows):
        sys.exit("pip install: the training from the installed package went wrong: %s" % rows)
    print("pip install: ok (torch %s, %s, shoal from %s, checkpoint of step 4 loaded on both ranks)"
          % (rows[0]["torch"], version, rows[0]["module"]))


if __name__ == "__main__":
    main()
