"""shoal for PyTorch. Needs torch; `import shoal` alone does not.

- init_process_group(): torch.distributed's default group for the current committed view, in one call
  (ranks, store and communicator from the agents; no MASTER_ADDR, no TCPStore).
- Checkpointer: flash checkpoints of any training state in this host's shared memory, replicated to peer
  hosts by the agent; restart-mode workers resume from the last step every rank finished.
- Elastic (with ElasticSampler): in-place elastic DDP; survivors keep their processes and live state
  when hosts fail or join; works with the user's own DataLoader. ElasticSampler(global_batch=, micro_batch=)
  keeps the global batch whatever the world (job.micro_batches, job.backward); on_reset (ResetInfo) runs after
  every rebuild; job.stats() (ElasticStats) says what the run lost.
- ElasticFSDP: in-place elastic FSDP2; at every view change the model is sharded again for the new world
  and the newest flash checkpoint is loaded into it resharded from the hosts' memory.
- Store and ProcessGroup: the torch.distributed store of one committed view (served by the agents) and
  the process group over shoal's abortable communicator (backend "shoal").

Supported torch: 1.13 (Debian 12's python3-torch) and 2.x; tested with 1.13.1 and 2.13.0.
"""
import torch

from ._compat import check_torch

check_torch(torch.__version__)

from .checkpointer import Checkpointer  # noqa: E402  (after the version check)
from .elastic import Elastic, is_view_change  # noqa: E402
from .elastic_fsdp import ElasticFSDP  # noqa: E402
from .elastic_steps import ResetInfo  # noqa: E402
from .group import init_process_group  # noqa: E402
from .process_group import ProcessGroup  # noqa: E402
from .run_stats import ElasticStats  # noqa: E402
from .safe_pickle import add_safe_globals, get_safe_globals  # noqa: E402
from .sampler import ElasticSampler  # noqa: E402
from .store import Store  # noqa: E402

__all__ = ["Checkpointer", "Elastic", "ElasticFSDP", "ElasticSampler", "ElasticStats", "ProcessGroup", "ResetInfo",
           "Store", "add_safe_globals", "get_safe_globals", "init_process_group", "is_view_change"]
