"""SGD-family update operators: ``sgd_update``, ``sgd_mom_update``, ``nag_mom_update`` and their
``mp_*`` (multi-precision) twins.

With ``g = clip(rescale_grad * grad, clip_gradient)`` — weight decay stays *outside* the clip::

    sgd_update:      w = (1 - lr*wd) * w - lr * g
    sgd_mom_update:  m = momentum*m - lr*wd*w - lr*g;   w = w + m
    nag_mom_update:  m' = momentum*m;  w_new = w - m' + (1+momentum) * (m' - lr*(g + wd*w))
                     m = m' - lr*(g + wd*w_new)

The ``mp_*`` forms take a float32 master copy ``weight32`` (and float32 momentum) for a float16
weight: the update runs on ``weight32`` and the weight receives it rounded to its own dtype.
No gradients (these are terminal operations).

Kernels: the numpy steps below are the reference. ``sgd_update`` and ``sgd_mom_update`` register
the one-pass C loops of ``mxref/_ext/optimizer_kernels.pyx`` as their 'cpu' fast kernels (over the
operator threads for large weights): they give the reference's bits and take contiguous
float32/float64 arrays of one dtype (``_c_loop_takes``); every other call, and everything under
``MXREF_ENABLE_EXT=0``, runs the reference.
"""
from __future__ import annotations

import numpy as np

from ..._ext import loader
from ..parallel import parallel_for
from ..registry import Param, register_kernel
from .common import CLIP, LAZY, LR, RESCALE, WD, mp_type, preprocess, update_op, write

_F32 = np.dtype(np.float32)
MOMENTUM = Param("float", 0.0, doc="Momentum: the decay of the previous update.")


# Each step writes the new weight into ``dst`` (which may be ``w`` itself) and may reuse ``g``,
# a fresh array, as scratch: the update is memory-bound, so fewer passes is faster.
def _sgd_step(w, g, p, dst):
    g *= p["lr"]
    np.multiply(w, 1.0 - p["lr"] * p["wd"], out=dst)
    dst -= g


def _mom_step(w, g, mom, p, dst):
    lr = p["lr"]
    mom *= p["momentum"]
    mom -= (lr * p["wd"]) * w
    g *= lr
    mom -= g
    np.add(w, mom, out=dst)


def _nag_step(w, g, mom, p, dst):
    # NOTE: the stored momentum takes its weight-decay term from the *updated* weight. MXNet's
    # kernels do so whenever the update runs in place (always, from the optimizer) and always
    # in mp_nag_mom_update; we follow them so NAG trains exactly as in MXNet. With wd = 0 it is
    # the textbook m = momentum*m - lr*g, w += momentum*m - lr*g.
    lr, momentum, wd = p["lr"], p["momentum"], p["wd"]
    mom *= momentum
    new_w = w - mom + (momentum + 1.0) * (mom - lr * (g + wd * w))
    mom -= lr * (g + wd * new_w)
    dst[...] = new_w


def _plain(step, n_states):
    def kernel(octx, params, inputs, outputs, req):
        w, grad, states = inputs[0], inputs[1], inputs[2:2 + n_states]
        g = preprocess(grad, params["rescale_grad"], params["clip_gradient"])
        write(outputs[0], req[0], lambda dst: step(w, g, *states, params, dst))
    return kernel


def _c_loop(ext, loop: str, hyper):
    """The fast kernel of an update whose C loop ``loop`` (``mxref/_ext/optimizer_kernels.pyx``)
    takes the weight, the gradient, the states and the new weight flat, then ``hyper`` (parameter
    names) and a range; registered for 'cpu' below, for the calls ``_c_loop_takes`` accepts."""
    run = getattr(ext, loop)

    def kernel(octx, p, inputs, outputs, req):
        if req[0] == "null":
            return
        flat = [a.reshape(-1) for a in (*inputs, outputs[0])]
        args = [p[name] for name in hyper]
        parallel_for(flat[0].size, lambda lo, hi: run(*flat, *args, lo, hi), work_per_item=4)
    kernel.__qualname__ = f"optimizer_kernels.{loop}"
    return kernel


def _c_loop_takes(p, inputs, outputs, req) -> bool:
    """The C loops take float32/float64 arrays of one dtype, all C-contiguous, and no ``req='add'``
    (strided arrays, other dtypes and accumulation run the numpy step)."""
    if req[0] == "add":
        return False
    dtype = inputs[0].dtype
    if dtype not in _C_DTYPES:
        return False
    return all(a.dtype == dtype and a.flags.c_contiguous for a in (*inputs, outputs[0]))


_C_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _multi_precision(step, n_states):
    def kernel(octx, params, inputs, outputs, req):
        grad, states, w32 = inputs[1], inputs[2:2 + n_states], inputs[2 + n_states]
        g = preprocess(grad, params["rescale_grad"], params["clip_gradient"], _F32)
        step(w32, g, *states, params, w32)
        write(outputs[0], req[0], lambda dst: np.copyto(dst, w32, casting="same_kind"))
    return kernel


_SGD = {"lr": LR, "wd": WD, "rescale_grad": RESCALE, "clip_gradient": CLIP, "lazy_update": LAZY}
_MOM = {"lr": LR, "momentum": MOMENTUM, "wd": WD, "rescale_grad": RESCALE, "clip_gradient": CLIP,
        "lazy_update": LAZY}
_NAG = {k: v for k, v in _MOM.items() if k != "lazy_update"}

_HYPER = ("lr", "wd", "rescale_grad", "clip_gradient")     # the C loops' arguments after the arrays
update_op("sgd_update", _plain(_sgd_step, 0), (), _SGD,
          "SGD step ``w = (1 - lr*wd)*w - lr*clip(rescale_grad*grad)``, weight decay outside the clip.")
update_op("sgd_mom_update", _plain(_mom_step, 1), ("mom",), _MOM,
          "Momentum SGD: ``mom = momentum*mom - lr*wd*w - lr*clip(rescale_grad*grad); w += mom``.")
update_op("nag_mom_update", _plain(_nag_step, 1), ("mom",), _NAG,
          "Nesterov momentum (see the module docstring for the exact in-place form MXNet uses).")
update_op("mp_sgd_update", _multi_precision(_sgd_step, 0), ("weight32",), _SGD,
          "``sgd_update`` on the float32 master copy ``weight32``; the weight gets it rounded.",
          infer_type=mp_type("mp_sgd_update"))
update_op("mp_sgd_mom_update", _multi_precision(_mom_step, 1), ("mom", "weight32"), _MOM,
          "``sgd_mom_update`` on the float32 master copy ``weight32`` with float32 ``mom``.",
          infer_type=mp_type("mp_sgd_mom_update"))
update_op("mp_nag_mom_update", _multi_precision(_nag_step, 1), ("mom", "weight32"), _NAG,
          "``nag_mom_update`` on the float32 master copy ``weight32`` with float32 ``mom``.",
          infer_type=mp_type("mp_nag_mom_update"))

# Fast kernels: the one-pass C loops, same bits as the numpy steps (see the module docstring).
_EXT = loader.load("optimizer_kernels", "one-pass SGD updates")
if _EXT is not None:
    register_kernel("sgd_update", "cpu", _c_loop(_EXT, "sgd_update", _HYPER), applies=_c_loop_takes)
    register_kernel("sgd_mom_update", "cpu", _c_loop(_EXT, "sgd_mom_update", ("lr", "momentum", *_HYPER[1:])),
                    applies=_c_loop_takes)
