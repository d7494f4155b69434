"""Fused multi-tensor SGD updates: ``multi_sgd_update``, ``multi_sgd_mom_update``, their ``mp``
(multi-precision) twins, and the ``preloaded_*`` forms whose learning rates live in arrays.

One operator updates ``num_weights`` weights, each with its own learning rate and weight decay, so
an optimizer step over many small parameters is a few engine operations instead of one per
parameter. Inputs are interleaved per weight, as MXNet lays them out::

    multi_sgd_update:          weight_0, grad_0, weight_1, grad_1, ...
    multi_sgd_mom_update:      weight_i, grad_i, mom_i
    multi_mp_sgd_update:       weight_i, grad_i, weight32_i
    multi_mp_sgd_mom_update:   weight_i, grad_i, mom_i, weight32_i
    preloaded_multi_*:         the same, then ``lrs`` and ``wds`` (float32 arrays of num_weights)

and output ``i`` is the new ``weight_i`` (the optimizer passes ``out=[weights]``). ``mom_i`` and
``weight32_i`` are mutated in place. Each weight's update is exactly its single-tensor operator's
(``sgd_update``, ``sgd_mom_update``, ``mp_sgd_update``, ``mp_sgd_mom_update``; formulas there)
with ``lr = lrs[i]``, ``wd = wds[i]``: the reference runs those operators' reference kernels, and
the 'cpu' fast kernel runs their 'cpu' kernels (the one-pass C loops where they apply), so fused
and unfused updates give the same bits.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, get, get_kernel, list_kernels, register, register_kernel
from .common import CLIP, RESCALE
from .sgd import MOMENTUM

_F32 = np.dtype(np.float32)
_NUM = Param("int", 1, doc="Number of updated weights.")
_LRS = Param("float_tuple", doc="Learning rates.")
_WDS = Param("float_tuple", doc="Weight decays, one per weight.")

# name -> (single-tensor op, per-weight input names, how many trailing float32 states)
_FAMILY = {
    "multi_sgd_update": ("sgd_update", ("weight", "grad"), 0),
    "multi_sgd_mom_update": ("sgd_mom_update", ("weight", "grad", "mom"), 0),
    "multi_mp_sgd_update": ("mp_sgd_update", ("weight", "grad", "weight32"), 1),
    "multi_mp_sgd_mom_update": ("mp_sgd_mom_update", ("weight", "grad", "mom", "weight32"), 2),
}


def _check(name: str, preloaded: bool):
    def validate(p):
        n = p["num_weights"]
        if n < 1:
            raise MXNetError(f"operator {name}: num_weights must be >= 1, got {n}")
        for key in () if preloaded else ("lrs", "wds"):
            if len(p[key]) != n:
                raise MXNetError(f"operator {name}: argument '{key}' has {len(p[key])} values, but "
                                 f"num_weights is {n}")
    return validate


def _shape(name: str, stride: int, preloaded: bool, count: str = "num_weights"):
    """Shape rule of a fused op: each weight's ``stride`` inputs and its output share one shape."""
    def infer_shape(p, ins):
        n, ins, outs = p[count], list(ins), []
        for i in range(n):
            group = ins[i * stride:(i + 1) * stride]
            known = next((s for s in group if s is not None), None)
            for j, s in enumerate(group):
                if s is not None and s != known:
                    raise MXNetError(f"operator {name}: weight {i}'s inputs must share one shape, got "
                                     f"{group} (input {i * stride + j})")
            ins[i * stride:(i + 1) * stride] = [known] * stride
            outs.append(known)
        if preloaded:
            for k, key in ((n * stride, "lrs"), (n * stride + 1, "wds")):
                if ins[k] is not None and int(np.prod(ins[k])) != n:
                    raise MXNetError(f"operator {name}: input '{key}' has shape {ins[k]}, but "
                                     f"num_weights is {n}")
                ins[k] = ins[k] or (n,)
        return ins, outs
    return infer_shape


def _type(name: str, stride: int, n_f32: int, preloaded: bool, count: str = "num_weights"):
    """Type rule of a fused op: weights and gradients share a dtype (all of them, unless ``n_f32``
    trailing inputs per weight are float32 states: the mp forms, where it is per weight)."""
    def infer_type(p, ins):
        n, ins = p[count], list(ins)
        # non-mp: every input shares one dtype; mp: weight/grad per weight, states float32
        plain = [k for i in range(n) for k in range(i * stride, (i + 1) * stride - n_f32)]
        f32 = [k for i in range(n) for k in range((i + 1) * stride - n_f32, (i + 1) * stride)]
        if preloaded:
            f32 += [n * stride, n * stride + 1]
        outs = []
        for i in range(n):
            span = range(i * stride, (i + 1) * stride - n_f32) if n_f32 else plain
            known = next((ins[k] for k in span if ins[k] is not None), None)
            for k in span:
                if ins[k] is not None and ins[k] != known:
                    raise MXNetError(f"operator {name}: input {k} has dtype {ins[k].name}, expected "
                                     f"{known.name} (weights and gradients share one dtype)")
                ins[k] = known
            outs.append(known)
        for k in f32:
            if ins[k] is not None and ins[k] != _F32:
                raise MXNetError(f"operator {name}: input {k} must be float32, got {ins[k].name}")
            ins[k] = _F32
        return ins, outs
    return infer_type


def _per_weight(single_kernel, stride: int, preloaded: bool):
    """A fused kernel: the kernel ``single_kernel()`` returns (looked up at each call, so the
    kernel switch applies) run on each weight's ``stride`` inputs and its output, with that
    weight's ``lr`` and ``wd``."""
    def kernel(octx, p, inputs, outputs, req):
        n = p["num_weights"]
        lrs, wds = (inputs[-2], inputs[-1]) if preloaded else (p["lrs"], p["wds"])
        run = single_kernel()
        for i in range(n):
            pi = dict(p, lr=float(lrs[i]), wd=float(wds[i]))
            run(octx, pi, inputs[i * stride:(i + 1) * stride], [outputs[i]], [req[i]])
    return kernel


def _register(name: str, preloaded: bool) -> None:
    single, names, n_f32 = _FAMILY[name]
    stride, mom = len(names), "mom" in names
    full = "preloaded_" + name if preloaded else name
    params = {} if preloaded else {"lrs": _LRS, "wds": _WDS}
    if mom:
        params["momentum"] = MOMENTUM
    params.update({"rescale_grad": RESCALE, "clip_gradient": CLIP, "num_weights": _NUM})
    states = [j for j, a in enumerate(names) if a in ("mom", "weight32")]
    op = get(single)
    reference = _per_weight(lambda: op.fcompute, stride, preloaded)
    register(OpDef(
        full, reference,
        arguments=lambda p: [f"{a}_{i}" for i in range(p["num_weights"]) for a in names]
        + (["lrs", "wds"] if preloaded else []),
        outputs=lambda p: [f"output{i}" for i in range(p["num_weights"])],
        mutate=lambda p: [i * stride + j for i in range(p["num_weights"]) for j in states],
        params=params, validate=_check(full, preloaded),
        infer_shape=_shape(full, stride, preloaded), infer_type=_type(full, stride, n_f32, preloaded),
        inplace=[(0, 0)], doc=f"Fused ``{single}`` over ``num_weights`` weights (see the module "
                              f"docstring for the input layout).\n\n" + __doc__))
    # The fast kernel: each weight through the single op's 'cpu' kernels (C loops where they apply).
    if list_kernels(single, "cpu"):
        fast = _per_weight(lambda: get_kernel(op, "cpu"), stride, preloaded)
        fast.__qualname__ = f"{full}_per_weight_{single}_cpu"
        register_kernel(full, "cpu", fast)


for _name in _FAMILY:
    _register(_name, False)
    _register(_name, True)
