"""Distributed k-means on the bundled digits, Rabit's classic demo, with a checkpoint per iteration.

Every rank owns a shard of the images. Per iteration each rank assigns its points to the nearest
centre and sums them per centre; one allreduce of ``[sums | counts]`` gives every rank the same new
centres. The centres are checkpointed, so with ``--engine robust`` a killed worker resumes.

Run::

    FI_TCP_IFACE=lo mpiexec -launcher fork -iface lo -n 4 python examples/collective/kmeans.py
    python -m mxref.tools.launch -n 4 --engine robust -- python examples/collective/kmeans.py
"""
import numpy as np

from mxref import collective as rabit
from mxref.io import load_digits

K, ITERS = 10, 15

rabit.init()
rank, world = rabit.get_rank(), rabit.get_world_size()
data, label = load_digits("all", flat=True)
shard = data[rank::world]                      # this rank's examples

version, centres, _ = rabit.load_checkpoint()
if centres is None:
    # Rank 0 picks the initial centres; broadcast makes them everyone's.
    pick = np.random.default_rng(0).choice(len(data), K, replace=False) if rank == 0 else None
    centres = rabit.broadcast(data[pick] if rank == 0 else None, 0)
for it in range(version, ITERS):
    dist = ((shard[:, None, :] - centres[None]) ** 2).sum(-1)
    nearest = dist.argmin(1)
    stats = np.zeros((K, 65), np.float64)      # per centre: 64 coordinate sums, then the count
    np.add.at(stats[:, :64], nearest, shard)
    np.add.at(stats[:, 64], nearest, 1.0)
    rabit.allreduce(stats, rabit.SUM)
    counts = np.maximum(stats[:, 64:], 1.0)
    centres = (stats[:, :64] / counts).astype(np.float32)
    inertia = np.array([dist.min(1).sum()])
    rabit.allreduce(inertia, rabit.SUM)
    if rank == 0:
        rabit.tracker_print(f"iteration {it}: inertia {inertia[0]:.1f}")
    rabit.checkpoint(centres)

# Purity: the share of points whose centre's majority label is their own label.
nearest = ((data[:, None, :] - centres[None]) ** 2).sum(-1).argmin(1)
votes = np.zeros((K, 10))
np.add.at(votes, (nearest, label.astype(int)), 1)
if rank == 0:
    rabit.tracker_print(f"cluster purity {votes.max(1).sum() / len(data):.3f}")
rabit.finalize()
