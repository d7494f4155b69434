"""The kernel table: one entry per (operator, device type), and the callable that runs each op.

Each op's ``fcompute`` is its reference kernel (numpy, on the host). Fast kernels register here
for a device type: Cython loops for 'cpu', CUDA kernels for 'gpu'. A fast kernel may decline a
call (``applies``); on the host the reference then runs, on a GPU that is an error.

``_KERNELS`` is the *active* table, ``(op, device) -> callable``, kept up to date whenever a
kernel is registered or removed or the switch (``mxref/_ext/switch.py``) flips: reference only
drops every host entry. Hot paths read it directly: ``mxref/ndarray/imperative.py`` caches the
kernel on its plan and resolves it again when ``len(_KERNELS)`` changes, which every change of
meaning does. ``mxref.ops.registry`` re-exports everything here; use it from there.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple

import numpy as np

from .._ext import switch as _switch
from ..base import MXNetError
from ..graph.node import lookup_op

if TYPE_CHECKING:
    from .registry import OpDef

__all__ = ["Kernel", "register_kernel", "unregister_kernel", "list_kernels", "get_kernel",
           "fast_kernel_for", "reference_kernel"]

_HOST = ("cpu", "cpu_pinned", "cpu_shared")      # device types whose memory numpy reads directly


class Kernel:
    """One registered fast kernel.

    ``fn`` has ``fcompute``'s signature ``(octx, params, inputs, outputs, req)``. ``applies``,
    ``(params, inputs, outputs, req) -> bool``, says whether ``fn`` takes a call (``None``: every
    call). ``exact`` promises the reference's bits; otherwise ``tol`` maps a dtype name to the
    ``(rtol, atol)`` it stays within, and the kernel harness (``mxref.test_utils.check_kernels``)
    holds it to that.
    """

    __slots__ = ("op", "device", "fn", "applies", "name", "exact", "tol")

    def __init__(self, op: str, device: str, fn: Callable, applies: Optional[Callable], name: str,
                 exact: bool, tol: Dict[str, Tuple[float, float]]):
        self.op, self.device, self.fn, self.applies, self.name = op, device, fn, applies, name
        self.exact, self.tol = exact, dict(tol or {})

    def takes(self, params, inputs, outputs, req) -> bool:
        """Whether this kernel runs the call (its ``applies`` predicate)."""
        return self.applies is None or bool(self.applies(params, inputs, outputs, req))

    def tolerance(self, dtype) -> Tuple[float, float]:
        """``(rtol, atol)`` against the reference for outputs of ``dtype``; ``(0, 0)`` when exact."""
        if self.exact:
            return 0.0, 0.0
        name = np.dtype(dtype).name
        if name not in self.tol:
            raise MXNetError(f"kernel {self.name} states no tolerance for {name}")
        return self.tol[name]

    def __repr__(self):
        return f"<Kernel {self.name} for ({self.op}, {self.device})>"


_FAST: Dict[Tuple[str, str], List[Kernel]] = {}     # every registered kernel, in priority order
_KERNELS: Dict[Tuple[str, str], Callable] = {}       # the active table (see above)
_DISPATCH: Dict[Tuple[str, str], Callable] = {}      # the callable of each pair, made once


def _dispatcher(opdef: OpDef, device: str, kernels: List[Kernel]) -> Callable:
    """The callable ``get_kernel`` hands out for an op with fast kernels on ``device``: the first
    kernel that takes the call, else (host) the reference. ``kernels`` is the live list."""
    if device == "cpu":
        def run(octx, params, inputs, outputs, req):
            for k in kernels:
                if k.applies is None or k.applies(params, inputs, outputs, req):
                    return k.fn(octx, params, inputs, outputs, req)
            return opdef.fcompute(octx, params, inputs, outputs, req)
    else:
        def run(octx, params, inputs, outputs, req):
            for k in kernels:
                if k.applies is None or k.applies(params, inputs, outputs, req):
                    return k.fn(octx, params, inputs, outputs, req)
            shapes = [(tuple(x.shape), str(x.dtype)) for x in inputs]
            raise MXNetError(f"operator {opdef.name}: no '{device}' kernel takes inputs {shapes} "
                             f"(registered: {', '.join(k.name for k in kernels)}); it does not "
                             "fall back to the host")
    run.__name__ = run.__qualname__ = f"{opdef.name}_{device}_kernels"
    return run


def _rebuild(*_) -> None:
    reference = _switch.reference_only()
    active = {}
    for key, kernels in _FAST.items():
        if kernels and not (reference and key[1] == "cpu"):
            if key not in _DISPATCH:      # one callable per pair: it reads the live list
                _DISPATCH[key] = _dispatcher(lookup_op(key[0]), key[1], kernels)
            active[key] = _DISPATCH[key]
    # Key by key (each dict operation is atomic), so a concurrent lookup never sees an empty table.
    for key in [k for k in _KERNELS if k not in active]:
        del _KERNELS[key]
    _KERNELS.update(active)


def register_kernel(op_name: str, device_type: str, fn: Callable, *, applies: Callable = None,
                    name: str = None, exact: bool = True,
                    tol: Dict[str, Tuple[float, float]] = None) -> Kernel:
    """Register a fast kernel for ``op_name`` on ``device_type`` (``'cpu'`` or ``'gpu'``).

    ``applies(params, inputs, outputs, req)`` tells whether ``fn`` takes a call; when it does not,
    the next kernel registered for the pair is asked, then (on ``'cpu'``) the reference runs.
    ``exact=False`` with ``tol`` (dtype name -> ``(rtol, atol)``) states how close to the
    reference it stays, where it cannot promise the same bits. ``name``
    defaults to ``fn``'s qualified name. Returns the entry (``unregister_kernel`` takes it).

    Example::

        register_kernel("sgd_update", "cpu", c_loop_update, applies=contiguous_float,
                        name="optimizer_kernels.sgd_update")
    """
    try:
        lookup_op(op_name)
    except MXNetError:
        raise MXNetError(f"register_kernel: operator {op_name!r} is not registered") from None
    if device_type not in ("cpu", "gpu"):
        raise MXNetError(f"register_kernel: device type must be 'cpu' or 'gpu', got {device_type!r}")
    if not exact and not tol:
        raise MXNetError(f"register_kernel({op_name!r}): a kernel that is not exact must state its tol")
    kernel = Kernel(op_name, device_type, fn, applies, name or getattr(fn, "__qualname__", repr(fn)),
                    exact, tol)
    _FAST.setdefault((op_name, device_type), []).append(kernel)
    _rebuild()
    return kernel


def unregister_kernel(kernel: Kernel) -> None:
    """Remove a kernel ``register_kernel`` returned (tests that register a temporary one)."""
    kernels = _FAST.get((kernel.op, kernel.device), [])
    if kernel in kernels:
        kernels.remove(kernel)
        if not kernels:
            del _FAST[(kernel.op, kernel.device)]
            _DISPATCH.pop((kernel.op, kernel.device), None)
    _rebuild()


def list_kernels(op_name: str = None, device_type: str = None) -> List[Kernel]:
    """The registered fast kernels (active or not), optionally of one op and/or device type."""
    return [k for (op, dev), ks in sorted(_FAST.items()) for k in ks
            if (op_name is None or op == op_name) and (device_type is None or dev == device_type)]


def get_kernel(opdef: OpDef, device_type: str) -> Callable:
    """The kernel to run ``opdef`` on ``device_type``.

    On the host (``cpu``, ``cpu_pinned``, ``cpu_shared``): the op's fast kernels, each asked in
    turn and the reference run when none takes the call; only the reference when the switch says
    so (``MXREF_ENABLE_EXT=0``, ``mxref._ext.reference_kernels()``) or none is registered. On any
    other device: its registered kernels, and a GPU op without one is an error; it never silently
    runs on the host.

    Called once per node at bind (``executor_plan.compile_nodes``), per distinct call in
    imperative mode (cached on the plan, ``mxref/ndarray/imperative.py``), and by
    ``symbol.eval_numpy`` and the device kvstore's reduction.
    """
    host = device_type in _HOST
    fn = _KERNELS.get((opdef.name, "cpu" if host else device_type))
    if fn is not None:
        return fn
    if host:
        if opdef.fcompute is None:
            raise MXNetError(f"operator {opdef.name} has no compute function")
        return opdef.fcompute
    raise MXNetError(f"operator {opdef.name} has no kernel for device type '{device_type}'")


def fast_kernel_for(op_name: str, device_type: str, params, inputs, outputs, req) -> Optional[Kernel]:
    """The fast kernel ``get_kernel``'s callable would run for this call now, or ``None`` when the
    reference would (none registered, none takes it, or the switch says reference only)."""
    host = device_type in _HOST
    if host and _switch.reference_only():
        return None
    for k in _FAST.get((op_name, "cpu" if host else device_type), ()):
        if k.takes(params, inputs, outputs, req):
            return k
    return None


def reference_kernel(opdef: OpDef) -> Callable:
    """The op's reference kernel (numpy, host memory), whatever the switch and the table say."""
    if opdef.fcompute is None:
        raise MXNetError(f"operator {opdef.name} has no compute function")
    return opdef.fcompute


_switch.on_change(_rebuild)
