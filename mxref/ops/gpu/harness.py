"""Compare an op's ``gpu`` kernel with its numpy reference on the same inputs (any backend).

``check_gpu_kernel('relu', [x])`` copies the inputs (and the starting outputs, for ``req='add'``)
to gpu(0), runs the registered gpu kernel there, copies the results back and compares them with
the reference run on the host, within the kernel's stated tolerance.
"""
from __future__ import annotations

import contextlib
import weakref
from typing import List, Sequence

import numpy as np

from ..._ext.cuda import runtime
from ...base import MXNetError
from .. import registry

__all__ = ["check_gpu_kernel", "to_device", "gpu_test_backend"]


@contextlib.contextmanager
def gpu_test_backend():
    """The GPU tests' backend: the one ``MXREF_CUDA`` names, else the emulator; on the way out the
    engine drains and the pools are dropped, so no emulated block outlives the emulator."""
    from ... import engine, storage  # noqa: PLC0415
    with runtime.use_emulator_unless_gpu() as be:
        try:
            yield be
        finally:
            engine.get().wait_for_all()
            storage.reset()


class _Octx:
    """What a kernel sees of its op context here: training flag, the device, its resources."""

    def __init__(self, ctx, is_train, resources=()):
        self.ctx, self.is_train, self.resources, self.run_ctx = ctx, is_train, resources, None


def to_device(host: np.ndarray, device_id: int = 0) -> runtime.DeviceArray:
    """A fresh device array holding ``host`` (outside the pools: for tests)."""
    host = np.ascontiguousarray(host)
    be, nbytes = runtime.backend(), max(host.nbytes, 1)
    ptr, owner = be.alloc(device_id, nbytes)
    buf = runtime.DeviceBuffer(ptr, nbytes, device_id, owner)
    # Given back to the device when the last view goes (the device counts what it lent).
    weakref.finalize(buf, be.free, device_id, owner, nbytes)
    arr = buf.view(host.shape, host.dtype)
    arr.set(host)
    return arr


def check_gpu_kernel(op_name: str, inputs: Sequence[np.ndarray], params: dict = None,
                     req="write", outputs: Sequence[np.ndarray] = None, is_train: bool = False,
                     rtol: float = None, atol: float = None) -> List[np.ndarray]:
    """Run ``op_name``'s gpu kernel and its reference on ``inputs``; assert they agree; return the
    gpu results (outputs, then inputs: some ops update inputs in place)."""
    from ...context import gpu  # noqa: PLC0415
    op = registry.get(op_name)
    p = op.parse_params(dict(params or {}))
    inputs = [np.ascontiguousarray(a) for a in inputs]
    _, shapes = op.infer_shape(p, [a.shape for a in inputs])
    _, types = op.infer_type(p, [a.dtype for a in inputs])
    start = [np.ascontiguousarray(o) for o in outputs] if outputs is not None else \
        [np.zeros(s, t) for s, t in zip(shapes, types)]
    reqs = [req] * len(start) if isinstance(req, str) else list(req)
    kernels = registry.list_kernels(op.name, "gpu")
    if not kernels:
        raise MXNetError(f"no gpu kernel is registered for {op.name}")
    ref_in, ref_out = [a.copy() for a in inputs], [o.copy() for o in start]
    registry.reference_kernel(op)(_Octx(None, is_train), p, ref_in, ref_out, reqs)
    d_in, d_out = [to_device(a) for a in inputs], [to_device(o) for o in start]
    kernel = registry.get_kernel(op, "gpu")
    kernel(_Octx(gpu(0), is_train), p, d_in, d_out, reqs)
    got = [d.get() for d in d_out] + [d.get() for d in d_in]
    want = ref_out + ref_in
    chosen = registry.fast_kernel_for(op.name, "gpu", p, d_in, d_out, reqs)
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype.kind == "f":
            r, a = chosen.tolerance(g.dtype) if chosen is not None else (0, 0)
            np.testing.assert_allclose(g, w, rtol=rtol if rtol is not None else r,
                                       atol=atol if atol is not None else a,
                                       err_msg=f"{op.name} gpu vs reference, array {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{op.name} gpu vs reference, array {i}")
    return got
