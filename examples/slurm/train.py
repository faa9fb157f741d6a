"""In-place elastic DDP with flash checkpoints, the trainer of train.sbatch (and of the README's quick start).

Run one per GPU slot under `shoal agent --workers connect -- python3 train.py`: a host lost or joined is a
rebuild in these same processes, and every 50 steps each rank's state is saved into its host's memory and
replicated to a peer (and persisted with the agent's --ckpt-dir)."""
import torch
import shoal
import shoal.torch

session = shoal.Session.connect()                        # this host's `shoal agent`, which started us
torch.manual_seed(0)                                     # the same model and data on every rank
model = torch.nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(65536, 32), torch.randn(65536, 4))
sampler = shoal.torch.ElasticSampler(len(data), batch_size=32)   # one global position, whatever the world
loader = torch.utils.data.DataLoader(data, batch_size=32, sampler=sampler)
ckpt = shoal.torch.Checkpointer(session)                 # flash checkpoints in peers' memory
job = shoal.torch.Elastic(session, model, opt, sampler=sampler, checkpointer=ckpt, ckpt_every=50)
for x, y in job.batches(loader, steps=2000):
    with job.step():                                     # a view change mid-step: discarded, then redone
        loss = torch.nn.functional.mse_loss(job.model(x), y)   # job.model: DDP over the current view
        opt.zero_grad()
        loss.backward()
        opt.step()
ckpt.wait()                                              # the last save held by a peer before exiting
