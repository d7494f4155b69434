"""``mx.nd.CachedOp``: a symbol called like a function on NDArrays, recorded by autograd as one step.

``CachedOp(sym)(*inputs)`` takes one NDArray per ``sym.list_inputs()`` (arguments and auxiliary
states, in that order of appearance) and returns the output (a list when ``sym`` has several).
It binds an executor for the call's shapes, dtypes and context and keeps it for the next call of
the same signature. While autograd records, the call is an ``autograd.Function`` whose backward
is the executor's backward, so gradients flow to every input; each recorded call binds its own
executor, since the backward needs that call's forward values.
"""
from __future__ import annotations

from typing import Dict, List

from .. import autograd
from ..autograd_function import Function
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .symbol import Symbol

__all__ = ["CachedOp"]


class _RecordedCall(Function):
    """One recorded call: forward and backward through an executor bound to the call's inputs."""

    def __init__(self, op: "CachedOp"):
        super().__init__()
        self.op = op
        self.executor = None

    def forward(self, *inputs):
        self.executor = self.op._bind(inputs, "write")
        self.executor.forward(is_train=autograd.is_training())
        outs = [o.copy() for o in self.executor.outputs]
        return outs[0] if len(outs) == 1 else outs

    def backward(self, *output_grads):
        ex = self.executor
        ex.backward([g.copy() for g in output_grads])
        grads = ex.grad_dict
        return [grads[n].copy() if n in grads else _zeros_like(ex.aux_dict[n]) for n in self.op._names]


def _zeros_like(x: NDArray) -> NDArray:
    from ..ndarray.utils import zeros_like  # noqa: PLC0415 - small helper, imported where used
    return zeros_like(x)


class CachedOp:
    """MXNet's ``mx.nd.CachedOp(sym, flags=())``: call ``sym`` on NDArrays (see the module doc).

    ``flags`` (MXNet's ``static_alloc``, ``static_shape``, ...) are accepted and kept; they tune
    MXNet's memory reuse and change no result.
    """

    def __init__(self, sym: Symbol, flags=()):
        if not isinstance(sym, Symbol):
            raise MXNetError(f"CachedOp: expected a Symbol, got {type(sym).__name__}")
        self._sym = sym
        self._names: List[str] = sym.list_inputs()
        self._args = set(sym.list_arguments())
        self.flags = dict(flags)
        self._executors: Dict[tuple, object] = {}

    def _bind(self, inputs, grad_req: str):
        ctx = inputs[0].context
        args = {n: x for n, x in zip(self._names, inputs) if n in self._args}
        aux = {n: x for n, x in zip(self._names, inputs) if n not in self._args}
        grads = {n: x.zeros_like() for n, x in args.items()} if grad_req != "null" else None
        return self._sym.bind(ctx, args=args, args_grad=grads, grad_req=grad_req, aux_states=aux)

    def __call__(self, *args, out=None, default_ctx=None):
        if len(args) != len(self._names):
            raise MXNetError(f"CachedOp: expected {len(self._names)} inputs {self._names}, got {len(args)}")
        for n, x in zip(self._names, args):
            if not isinstance(x, NDArray):
                raise MXNetError(f"CachedOp: input '{n}' must be an NDArray, got {type(x).__name__}")
        if autograd.is_recording():
            res = _RecordedCall(self)(*args)
        else:
            key = tuple((x.shape, x.dtype, str(x.context)) for x in args)
            ex = self._executors.get(key)
            if ex is None:
                ex = self._executors[key] = self._bind(args, "null")
            else:
                for n, x in zip(self._names, args):
                    (ex.arg_dict if n in self._args else ex.aux_dict)[n][:] = x
            ex.forward(is_train=autograd.is_training())
            outs = [o.copy() for o in ex.outputs]
            res = outs[0] if len(outs) == 1 else outs
        if out is None:
            return res
        targets = [out] if isinstance(out, NDArray) else list(out)
        for dst, src in zip(targets, [res] if isinstance(res, NDArray) else res):
            src.copyto(dst)
        return out
