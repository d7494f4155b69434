"""``_CrossDeviceCopy``: the copy node the placement pass puts on every edge between two devices.

Math: ``out = data``; the output lives on ``dst``, the input on ``src`` (contexts written as
``cpu(1)``). Gradient: the same copy the other way, ``_CrossDeviceCopy(ograd, src=dst, dst=src)``,
so a gradient flows back to the device its forward value came from (autograd records one for
``as_in_context`` / ``copyto`` across devices). The executor pushes these nodes on the copy
workers (``FnProperty.CPU_PRIORITIZED`` between host devices), so they overlap the computation
on both sides; ``passes/place_device.py`` inserts them. Kernel: numpy ``copyto`` (a memcpy).
"""
from __future__ import annotations

import re

import numpy as np

from ..base import MXNetError
from ..context import Context
from ..graph import NodeEntry, make_node
from .registry import OpDef, Param, register

__all__ = ["parse_context"]

_CTX = re.compile(r"^(cpu|gpu|cpu_pinned|cpu_shared)\((\d+)\)$")


def parse_context(text: str, what: str = "context") -> Context:
    """``'cpu(1)'`` -> ``mx.cpu(1)`` (the form ``str(ctx)`` writes)."""
    m = _CTX.match(str(text).strip())
    if m is None:
        raise MXNetError(f"_CrossDeviceCopy: {what} {text!r} is not a context such as 'cpu(1)'")
    return Context(m.group(1), int(m.group(2)))


def _kernel(octx, params, inputs, outputs, req):
    r = req[0]
    if r == "add":
        outputs[0] += inputs[0]
    elif r != "null":
        np.copyto(outputs[0], inputs[0])


def _back(node, ograds):
    p = node.params
    back = make_node("_CrossDeviceCopy", [ograds[0]], f"{node.name}_backward",
                     params={"src": p["dst"], "dst": p["src"]})
    return NodeEntry(back, 0, 0)


_OP = register(OpDef(
    "_CrossDeviceCopy", _kernel,
    params={"src": Param("str", "", "the device of the input, e.g. cpu(0)"),
            "dst": Param("str", "", "the device of the output, e.g. cpu(1)")},
    gradient=lambda node, ograds: [_back(node, ograds)],
    doc="_CrossDeviceCopy(data, src, dst): ``data`` copied from device ``src`` to device ``dst``."))
_OP.output_ctx = lambda params: parse_context(params["dst"], "dst")
