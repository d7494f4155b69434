"""AMP's front end: ``init`` (casting wrappers on ``mx.nd``/``mx.sym``), loss scaling for Gluon
Trainers, and the operator lists (``convert_symbol`` and friends are in ``convert.py``).

Two ways to use float16 without rewriting a model:

* **Training**: ``amp.init()`` replaces the operator functions of ``mx.nd`` and ``mx.sym`` (and so
  Gluon's ``F``) by wrappers that cast their inputs: to float16 for ``list_lp16_ops``, to float32
  for ``list_fp32_ops`` (and ``list_conditional_fp32_ops`` for the listed parameter values), to
  the widest input type for ``list_widest_type_cast``. ``amp.init_trainer(trainer)`` attaches a
  :class:`LossScaler`; ``with amp.scale_loss(loss, trainer) as scaled: scaled.backward()``
  multiplies the loss by the scale and sets the trainer to divide the gradients by it; the
  trainer skips a step whose gradients overflowed.
* **Inference**: ``convert_symbol`` walks a float32 graph and inserts ``amp_cast`` /
  ``amp_multicast`` nodes by the same lists (the pass MXNet calls ``ReducePrecision``); graph
  outputs are cast back to float32. ``convert_model`` also casts the parameters whose variables
  were given a low-precision ``__dtype__``; ``convert_bucketing_module`` does it for every bucket
  of a ``BucketingModule``.
"""
from __future__ import annotations

import contextlib
import logging
from typing import List, Tuple

import numpy as np

from ... import ndarray, symbol
from ...base import MXNetError
from ...ndarray import NDArray
from ...symbol import Symbol
from . import lists
from .loss_scaler import LossScaler

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "list_lp16_ops", "list_fp32_ops",
           "list_lp16_fp32_ops", "list_conditional_fp32_ops", "list_widest_type_cast",
           "list_loss_output_functions",
           "list_lp16_use_fp32_params"]

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_SPACES = ("contrib", "linalg", "image", "random", "sparse")


def _target(target_dtype) -> np.dtype:
    if target_dtype in ("bfloat16",):
        raise MXNetError("amp: target_dtype 'bfloat16' is not available in mxref (numpy has no "
                         "bfloat16); use 'float16'")
    if np.dtype(target_dtype) != _F16:
        raise MXNetError(f"amp: target_dtype must be 'float16', got {target_dtype!r}")
    return _F16


def list_lp16_ops(target_dtype) -> List[str]:
    """Operators AMP runs in the low precision type."""
    _target(target_dtype)
    return lists.symbol_fp16.FP16_FUNCS


def list_fp32_ops(target_dtype) -> List[str]:
    """Operators AMP always runs in float32."""
    _target(target_dtype)
    return lists.symbol_fp16.FP32_FUNCS


def list_lp16_fp32_ops(target_dtype) -> List[str]:
    """Operators that run in whichever float type they are given."""
    _target(target_dtype)
    return lists.symbol_fp16.FP16_FP32_FUNCS


def list_conditional_fp32_ops(target_dtype) -> List[Tuple[str, str, List[str]]]:
    """``(operator, parameter, values)``: float32 when the parameter has one of the values."""
    _target(target_dtype)
    return lists.symbol_fp16.CONDITIONAL_FP32_FUNCS


def list_widest_type_cast(target_dtype) -> List[str]:
    """Operators whose inputs are cast to the widest of their types."""
    _target(target_dtype)
    return lists.symbol_fp16.WIDEST_TYPE_CASTS


def list_loss_output_functions(target_dtype) -> List[str]:
    """Loss layers whose ``grad_scale`` ``amp.init`` multiplies by the loss scale."""
    _target(target_dtype)
    return lists.symbol_fp16.LOSS_OUTPUT_FUNCTIONS


def list_lp16_use_fp32_params(target_dtype):
    """Inputs of low-precision operators kept in float32 (none for float16)."""
    _target(target_dtype)
    return None


# -- amp.init: casting wrappers on the operator functions --------------------------------------
_state = {"initialized": False, "scaler_used": False, "scaler": None, "originals": []}


def _cast(x, dtype: np.dtype):
    """``x`` cast to ``dtype`` when it is a float16/float32 Symbol or NDArray; else ``x``."""
    if isinstance(x, Symbol):
        return symbol.amp_cast(x, dtype=dtype)
    if isinstance(x, NDArray) and x.dtype != dtype and x.dtype in (_F16, _F32):
        return ndarray.amp_cast(x, dtype=dtype)
    return x


def _homes(module, name: str) -> List[Tuple[object, str]]:
    """Where the function of operator ``name`` lives in ``module`` (``mx.nd`` or ``mx.sym``)."""
    for space in _SPACES:
        prefix = f"_{space}_"
        if name.startswith(prefix) and hasattr(getattr(module, space, None), name[len(prefix):]):
            return [(getattr(module, space), name[len(prefix):])]
    found = [(ns, name) for ns in (module, getattr(module, "op", None), getattr(module, "_internal", None))
             if ns is not None and hasattr(ns, name)]
    return found


def _wrap_inputs(f, dtype: np.dtype, is_symbol: bool, cond=None):
    """``f`` with every array input cast to ``dtype`` (for a Symbol, also the inputs the operator
    creates itself, such as weights; auxiliary states are never cast)."""
    def run(*args, **kwargs):
        if cond is not None and kwargs.get(cond[0]) not in cond[1]:
            return f(*args, **kwargs)
        if not is_symbol:
            return f(*[_cast(a, dtype) for a in args], **{k: _cast(v, dtype) for k, v in kwargs.items()})
        out = f(*args, **kwargs)
        node = out._outputs[0].node
        aux = set(node.op.mutate_inputs(node.params)) | set(range(
            len(node.op.list_arguments(node.params)), len(node.inputs)))
        node.inputs = [e if i in aux else _cast(Symbol([e]), dtype)._outputs[0]
                       for i, e in enumerate(node.inputs)]
        return out
    run.__name__, run.__doc__, run.__module__ = f.__name__, f.__doc__, f.__module__
    return run


def _wrap_widest(f, target: np.dtype):
    """``f`` with its array inputs brought to one type: ``amp_multicast`` for Symbols; for
    NDArrays, float16 inputs become float32 when any input is float32."""
    def run(*args, **kwargs):
        args = list(args)
        slots = [(args, i) for i, a in enumerate(args) if isinstance(a, (Symbol, NDArray))] + \
            [(kwargs, k) for k, v in kwargs.items() if isinstance(v, (Symbol, NDArray))]
        values = [box[key] for box, key in slots]
        if any(isinstance(v, Symbol) for v in values):
            cast = symbol.amp_multicast(*values, num_outputs=len(values))
            for (box, key), i in zip(slots, range(len(values))):
                box[key] = cast[i]
        else:
            widest = _F32 if any(v.dtype == _F32 for v in values) else target
            for box, key in slots:
                if box[key].dtype == target != widest:
                    box[key] = ndarray.amp_cast(box[key], dtype=widest)
        return f(*args, **kwargs)
    run.__name__, run.__doc__, run.__module__ = f.__name__, f.__doc__, f.__module__
    return run


def _wrap_loss(f, is_symbol: bool):
    """Imperative loss layers scale their gradient by the loss scale; symbolic ones cannot follow
    a changing scale, which MXNet says with a warning."""
    def run(*args, **kwargs):
        if is_symbol:
            logging.warning("%s does not support dynamic loss scaling in symbolic and hybridized "
                            "execution.", f.__name__)
        else:
            kwargs["grad_scale"] = kwargs.get("grad_scale", 1.0) * _state["scaler"].loss_scale
        return f(*args, **kwargs)
    run.__name__, run.__doc__, run.__module__ = f.__name__, f.__doc__, f.__module__
    return run


def _install(module, wrap, names) -> None:
    for name in names:
        for ns, attr in _homes(module, name):
            original = getattr(ns, attr)
            _state["originals"].append((ns, attr, original))
            setattr(ns, attr, wrap(original, name))


def init(target_dtype="float16", target_precision_ops=None, conditional_fp32_ops=None,
         fp32_ops=None, layout_optimization: bool = False) -> None:
    """Turn AMP on for ``mx.nd`` and ``mx.sym`` (call once, before building the model).

    ``target_precision_ops``, ``conditional_fp32_ops`` and ``fp32_ops`` replace the default lists.
    A second call does nothing, as in MXNet.
    """
    if _state["initialized"]:
        return
    target = _target(target_dtype)
    logging.info("Using AMP")
    lp16 = list_lp16_ops(target) if target_precision_ops is None else target_precision_ops
    fp32 = list_fp32_ops(target) if fp32_ops is None else fp32_ops
    cond = list_conditional_fp32_ops(target) if conditional_fp32_ops is None else conditional_fp32_ops
    for module, is_sym in ((symbol, True), (ndarray, False)):
        _install(module, lambda f, n, s=is_sym: _wrap_inputs(f, target, s), lp16)
        _install(module, lambda f, n, s=is_sym: _wrap_inputs(f, _F32, s), fp32)
        for name, arg, values in cond:
            _install(module, lambda f, n, s=is_sym, c=(arg, values): _wrap_inputs(f, _F32, s, c), [name])
        _install(module, lambda f, n: _wrap_widest(f, target), list_widest_type_cast(target))
    _state["scaler"] = LossScaler()
    for module, is_sym in ((ndarray, False), (symbol, True)):
        for name in list_loss_output_functions(target):
            if hasattr(module, name):
                _state["originals"].append((module, name, getattr(module, name)))
                setattr(module, name, _wrap_loss(getattr(module, name), is_sym))
    _state["initialized"] = True


def _uninit() -> None:
    """Undo ``init`` (restores the operator functions); used by tests."""
    for ns, attr, original in reversed(_state["originals"]):
        setattr(ns, attr, original)
    _state.update(initialized=False, scaler_used=False, scaler=None, originals=[])


def _is_trainer(obj) -> bool:
    return hasattr(obj, "_params") and hasattr(obj, "_scale") and hasattr(obj, "step")


def init_trainer(optimizer_or_trainer) -> None:
    """Give a Gluon Trainer a dynamic loss scaler (the first one shares ``init``'s scaler, which
    the imperative loss layers read)."""
    if not _state["initialized"]:
        raise MXNetError("AMP not initialized, did you forget to call amp.init()?")
    if not _is_trainer(optimizer_or_trainer):
        raise TypeError("AMP is currently only compatible with Gluon Trainer, got "
                        f"{type(optimizer_or_trainer).__name__}")
    scaler = _state["scaler"] if not _state["scaler_used"] else LossScaler()
    _state["scaler_used"] = True
    optimizer_or_trainer._amp_loss_scaler = scaler
    optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Yield ``loss * loss_scale`` (or a list of them) and set the trainer to divide by it."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise MXNetError("Loss scaler is not initialized, did you forget to call amp.init_trainer()?")
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [x * scaler.loss_scale for x in loss]
    else:
        yield scaler.loss_scale * loss


def unscale(optimizer_or_trainer) -> None:
    """Divide the gradients by the loss scale now (to clip them, say); the step then uses scale 1."""
    if not _is_trainer(optimizer_or_trainer):
        raise TypeError("AMP is currently only compatible with Gluon Trainer, got "
                        f"{type(optimizer_or_trainer).__name__}")
    for p in optimizer_or_trainer._params:
        if p.grad_req != "null":
            for g in p.list_grad():
                g[:] *= optimizer_or_trainer._scale
    optimizer_or_trainer._scale = 1.0


# MXNet's scripts reach the conversions as ``amp.amp.convert_model`` too (``from
# mxnet.contrib.amp import amp``); they live in convert.py, which needs the lists above first.
from .convert import (  # noqa: E402
    convert_bucketing_module,
    convert_hybrid_block,
    convert_model,
    convert_symbol,
)

__all__ += ["convert_symbol", "convert_model", "convert_hybrid_block", "convert_bucketing_module"]
