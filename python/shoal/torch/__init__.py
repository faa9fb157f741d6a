"""shoal for PyTorch. Needs torch; `import shoal` alone does not.

- Checkpointer: flash checkpoints of any training state in this host's shared memory, replicated to peer
  hosts by the agent; restart-mode workers resume from the last step every rank finished.
- Elastic (with ElasticSampler): in-place elastic DDP; survivors keep their processes and live state
  when hosts fail or join.
- Store and ProcessGroup: the torch.distributed store of one committed view (served by the agents) and
  the process group over shoal's abortable communicator (backend "shoal").
"""
import torch  # noqa: F401  (fails here, clearly, where torch is missing)

from .checkpointer import Checkpointer
from .elastic import Elastic, is_view_change
from .process_group import ProcessGroup
from .sampler import ElasticSampler
from .store import Store

__all__ = ["Checkpointer", "Elastic", "ElasticSampler", "ProcessGroup", "Store", "is_view_change"]
