"""IdentityAttachKLSparseReg: identity forward; backward adds the gradient of a KL sparseness penalty.

For sigmoid activations ``x`` ``(N, K)`` whose mean activation should be ``rho``
(``sparseness_target``), the backward keeps a running mean ``rho_hat`` per unit in the auxiliary
state ``moving_avg`` and adds the derivative of ``penalty * KL(rho || rho_hat)``::

    out = x
    rho_hat <- momentum * rho_hat + (1 - momentum) * mean_n x[n, :]      (updated by the backward)
    dx = ograd + penalty * (-rho / rho_hat + (1 - rho) / (1 - rho_hat))

The added term is a regulariser's gradient, not a derivative of the identity forward.
``_backward_IdentityAttachKLSparseReg`` takes ``(ograd, data, moving_avg)`` and writes
``moving_avg`` (its auxiliary state), as MXNet updates it in the backward pass.
"""
from __future__ import annotations

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape

PARAMS = {
    "sparseness_target": Param("float", 0.1, doc="The sparseness target"),
    "penalty": Param("float", 0.001, doc="The tradeoff parameter for the sparseness penalty"),
    "momentum": Param("float", 0.9, doc="The momentum for running average"),
}


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), [None]
    if len(d) < 2:
        raise MXNetError(f"IdentityAttachKLSparseReg: 'data' must be (batch, units), got shape {tuple(d)}")
    return [d, merge_shape("IdentityAttachKLSparseReg", "moving_avg", in_shapes[1], (d[1],))], [d]


def forward(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0])


def backward(octx, p, inputs, outputs, req):
    g, x, avg = inputs
    x2 = x.reshape(x.shape[0], -1)
    if x2.shape[1] != avg.shape[0]:
        raise MXNetError(f"IdentityAttachKLSparseReg: moving_avg of shape {avg.shape} does not match the "
                         f"{x2.shape[1]} units of data shape {x.shape}")
    m, rho = p["momentum"], p["sparseness_target"]
    avg[...] = m * avg + (1 - m) * x2.mean(axis=0)
    reg = p["penalty"] * (-rho / avg + (1 - rho) / (1 - avg))
    assign(outputs[0], req[0], (g.reshape(x2.shape) + reg[None, :]).reshape(x.shape).astype(g.dtype))


def gradient(node, ograds):
    ins = [ograds[0], node.inputs[0], node.inputs[1]]
    n = backward_node(node, "_backward_IdentityAttachKLSparseReg", ins)
    return [entry(n), None]


register(OpDef("IdentityAttachKLSparseReg", forward, aux_states=["moving_avg"], params=PARAMS,
               infer_shape=infer_shape, infer_type=lambda p, t: ([t[0], t[1] or t[0]], [t[0]]),
               gradient=gradient, inplace=[(0, 0)], doc=__doc__))
register(OpDef("_backward_IdentityAttachKLSparseReg", backward, arguments=["ograd", "data"],
               aux_states=["moving_avg"], params=PARAMS, infer_shape=lambda p, s: (list(s), [s[1]]),
               infer_type=lambda p, t: (list(t), [t[0]])))
