"""The collective API in five calls: allreduce a numpy array and an NDArray, broadcast an object.

Run with MPI (loopback)::

    FI_TCP_IFACE=lo mpiexec -launcher fork -iface lo -n 3 python examples/collective/basic.py

or with the fault-tolerant engine: ``python -m mxref.tools.launch -n 3 --engine robust --
python examples/collective/basic.py``. Each rank prints its lines tagged ``[rank]``.
"""
import numpy as np

import mxref as mx
from mxref import collective as rabit

rabit.init()                          # engine from the launcher ('robust') or 'mpi'
rank, world = rabit.get_rank(), rabit.get_world_size()

a = np.arange(3, dtype=np.float32) + rank
rabit.tracker_print(f"before allreduce a = {a}")
rabit.allreduce(a, rabit.SUM)         # in place: every rank now holds the same sum
expect = world * np.arange(3) + world * (world - 1) / 2
assert np.array_equal(a, expect.astype(np.float32))
rabit.tracker_print(f"after  allreduce a = {a}")

m = np.array([rank * 10], np.int64)
rabit.allreduce(m, "max")             # ops by name work too: sum, max, min, prod, bitor
assert m[0] == (world - 1) * 10

x = mx.nd.ones((2, 2)) * (rank + 1)   # an NDArray: waited for, reduced, readable at once
rabit.allreduce(x, rabit.SUM)
assert (x.asnumpy() == world * (world + 1) / 2).all()

s = rabit.broadcast(f"hello from rank {rank}" if rank == 0 else None, 0)
rabit.tracker_print(f"broadcast from rank 0: {s!r}")
assert s == "hello from rank 0"
rabit.finalize()
