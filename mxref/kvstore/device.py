"""The ``device`` store: each key is merged and updated on one of the devices that push it.

MXNet's ``CommDevice``: instead of sending every gradient to the host, each key gets its merge
buffer on one of the pushing devices; the others' values are copied there, summed with the
device's ``add_n`` kernel, updated there, and broadcast back on pull.

Placement (complaint #10: with naive placement the first device holds every buffer): on the
first push the devices are the contexts of the pushed values, and every key initialised so far
is placed by greedy bin-packing -- largest key first, each onto the device with the fewest bytes
assigned so far (ties: the device seen first). Keys initialised later are placed the same way at
their first push. ``describe_placement()`` reports the result.

2-bit gradient compression (``set_gradient_compression``) applies to pushes: each value is
quantized on its own device against a residual kept there per (key, source), the small buffer is
copied to the merge device and dequantized, and the dequantized values are summed. A single
value is compressed too, as in MXNet. Pulls are not compressed.
"""
from __future__ import annotations

import math
from typing import Dict, List, Tuple

from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context
from ..ndarray import NDArray
from ..ops import registry
from ..ops.registry import OpContext
from .base import KVStore, copy_into, is_host, push_op
from .local import LocalKVStore

__all__ = ["DeviceKVStore"]


def _nbytes(meta: Tuple) -> int:
    shape, dtype = meta
    return math.prod(shape) * dtype.itemsize


@KVStore.register
class DeviceKVStore(LocalKVStore):
    """``device``: merge buffers spread over the pushing devices; reduce and update run there."""

    registry_names = ("device",)

    def __init__(self, name: str = "device"):
        super().__init__(name)
        self._devices: List[Context] = []        # in the order first seen in a push
        self._placement: Dict = {}               # key -> Context of its merge buffer
        self._load: Dict[Context, int] = {}      # Context -> bytes of keys placed there
        self._gc_bufs: Dict = {}                 # (key, source index) -> compression buffers

    # -- placement -------------------------------------------------------------------------------
    def _home(self, key, value: NDArray) -> Context:
        # Before its first push a key lives where its initial value came from.
        return self._placement.get(key, value.context)

    def _before_push(self, groups) -> None:
        for _, arrays in groups:
            for a in arrays:
                if a.context not in self._load:
                    self._devices.append(a.context)
                    self._load[a.context] = 0
        if self._compression is not None:
            for key, arrays in groups:
                self._check_compressible(key, arrays)
        # row_sparse keys stay in their host row table (``sparse.py``): nothing to place.
        unplaced = [k for k in self._meta if k not in self._placement and k not in self._rsp]
        # Largest first; equal sizes keep MXNet's key order, so placement is deterministic.
        unplaced.sort(key=lambda k: (-_nbytes(self._meta[k]), self._rank(k)))
        for key in unplaced:
            dev = min(self._devices, key=lambda d: self._load[d])
            self._placement[key] = dev
            self._load[dev] += _nbytes(self._meta[key])
            stored = self._store[key]
            if stored.context != dev:
                moved = nd.empty(stored.shape, dev, stored._dtype)
                copy_into(stored, moved, 0, "KVStorePlace")
                self._store[key] = moved

    def describe_placement(self) -> Dict[str, Dict]:
        """Per device: the bytes of merge buffers placed there and their keys.

        Returns
        -------
        dict
            ``{'cpu(0)': {'bytes': 4096, 'keys': [3, 1]}, ...}`` in device order; empty before
            the first push. Each key's stored value and merge buffer live on its device.
        """
        report = {str(d): {"bytes": self._load[d], "keys": []} for d in self._devices}
        for key in sorted(self._placement, key=self._rank):
            report[str(self._placement[key])]["keys"].append(key)
        return report

    # -- reduce ----------------------------------------------------------------------------------
    def _sum(self, target: NDArray, sources: List[NDArray], priority: int) -> None:
        # The device's own add_n kernel (numpy on CPU, the GPU backend's on a GPU).
        op = registry.get("add_n")
        params = op.parse_params({"num_args": len(sources)})
        ctx = target.context
        kernel = registry.get_kernel(op, ctx.device_type)

        def reduce(run_ctx):
            kernel(OpContext(False, ctx, (), run_ctx), params, [s._data() for s in sources],
                   [target._data()], ["write"])
        push_op(reduce, ctx, sources, (target,), priority, "KVStoreReduce")

    def _reduce(self, key, values: List[NDArray], priority: int, into) -> NDArray:
        if self._compression is None:
            return super()._reduce(key, values, priority, into)
        ctx = self._store[key].context
        gc = self._compression
        dequantized = []
        for i, v in enumerate(values):
            residual, send, recv, deq = self._compression_buffers(key, i, v, ctx)

            def quantize(run_ctx, v=v, residual=residual, send=send):
                gc.quantize(v._data(), residual._data(), send._data())
            push_op(quantize, v.context, (v,), (residual, send), priority, "KVStoreQuantize2Bit")
            copy_into(send, recv, priority, "KVStoreCopyCompressed")

            def dequantize(run_ctx, recv=recv, deq=deq):
                gc.dequantize(recv._data(), deq._data())
            push_op(dequantize, ctx, (recv,), (deq,), priority, "KVStoreDequantize2Bit")
            dequantized.append(deq)
        target = into if into is not None else self._merge_buffer(key)
        self._sum(target, dequantized, priority)
        return target

    def _compression_buffers(self, key, i: int, v: NDArray, ctx: Context):
        """Residual and send buffer on the source's device; receive and dequantized on ``ctx``."""
        bufs = self._gc_bufs.get((key, i))
        if bufs is None or bufs[2].context != ctx:
            small = (self._compression.compressed_size(v.size),)
            residual = bufs[0] if bufs is not None else nd.zeros(v.shape, v.context, v._dtype)
            send = bufs[1] if bufs is not None else nd.empty(small, v.context, v._dtype)
            recv = send if send.context == ctx else nd.empty(small, ctx, v._dtype)
            bufs = self._gc_bufs[(key, i)] = (residual, send, recv, nd.empty(v.shape, ctx, v._dtype))
        return bufs

    def _check_compressible(self, key, arrays: List[NDArray]) -> None:
        for a in arrays:
            if a._dtype.name != "float32":
                raise MXNetError(f"kvstore.push: 2-bit gradient compression needs float32 values; "
                                 f"key {key!r} holds {a._dtype.name}")
            # GPU arrays have their own kernels (mxref/ops/gpu/compression.py)
            if not is_host(a.context) and a.context.device_type != "gpu":
                raise MXNetError(f"kvstore.push: 2-bit compression kernels exist for CPU and GPU contexts "
                                 f"only; key {key!r} got a value on {a.context}")
