r"""``_foreach``: run a body subgraph once per slice of the data along axis 0, carrying states.

With data :math:`X` (``T`` slices), states :math:`s_0` and free inputs :math:`p` (MXNet's
``remain``), step ``t`` computes :math:`(y_t, s_{t+1}) = body(X_t, s_t, p)`; the outputs are
:math:`Y = stack(y_0..y_{T-1})` and :math:`s_T`. The backward runs the body's gradient in reverse:
:math:`(\bar X_t, \bar s_t, \bar p_t) = body'(X_t, s_t, p)^T (\bar y_t, \bar s_{t+1})`, with
:math:`\bar p = \sum_t \bar p_t` and the initial states' gradient :math:`\bar s_0`.
"""
from __future__ import annotations

from ..registry import Param
from .common import (
    COMMON_PARAMS,
    locs_param,
    merge,
    register_pair,
    row,
    service,
    stack,
    unstack,
    write_outputs,
)

PARAMS = dict(COMMON_PARAMS,
              num_out_data=Param("int", doc="Number of step outputs (stacked along axis 0)."),
              in_data_locs=locs_param("Subgraph input positions of the data slices."),
              in_state_locs=locs_param("Subgraph input positions of the loop states."),
              remain_locs=locs_param("Subgraph input positions of the other (free) inputs."))


def _sub_locs(p):
    """Node input ``k`` feeds subgraph input ``locs[k]`` (data, then states, then the rest)."""
    return list(p["in_data_locs"]) + list(p["in_state_locs"]) + list(p["remain_locs"])


def _infer(kind):
    def rule(p, ins, outs):
        nd, nod = len(p["in_data_locs"]), p["num_out_data"]
        locs = _sub_locs(p)
        length = next((s[0] for s in ins[:nd] if kind == "shape" and s), 0)
        sub_in = [None] * len(locs)
        for k, loc in enumerate(locs):
            sub_in[loc] = unstack(kind, ins[k]) if k < nd else ins[k]
        sub_out = [unstack(kind, v) for v in outs[:nod]] + list(outs[nod:])
        for _ in range(2):      # a state's value flows from its output back into its input
            sub_in, sub_out = service().infer(p["subgraphs"][0], kind, sub_in, sub_out)
            for k, loc in enumerate(p["in_state_locs"]):
                sub_in[loc] = sub_out[nod + k] = merge(
                    kind, sub_in[loc], sub_out[nod + k],
                    f"foreach: loop state {k} at the loop's start and as the body returns it")
        new_ins = [(ins[k] if kind == "shape" and ins[k] is not None and len(ins[k]) == 1
                    else stack(kind, sub_in[loc], length)) if k < nd else sub_in[loc]
                   for k, loc in enumerate(locs)]
        return new_ins, [stack(kind, v, length) for v in sub_out[:nod]] + list(sub_out[nod:])
    return rule


def _steps(octx, p, inputs, record=False):
    """Run the loop; yields each step's outputs, or ``(outputs, tape)`` when recording for the
    backward (which replays the forward: the operator keeps no state between the two)."""
    nd, ns = len(p["in_data_locs"]), len(p["in_state_locs"])
    locs, graph = _sub_locs(p), p["subgraphs"][0]
    run = service().record if record else service().run
    feed = [None] * len(locs)
    for k, loc in enumerate(locs):
        feed[loc] = inputs[k]
    for t in range(inputs[0].shape[0] if nd else 0):
        for k in range(nd):
            feed[locs[k]] = row(inputs[k], t)
        step = run(graph, feed, octx)
        yield step
        outs = step[0] if record else step
        for k in range(ns):
            feed[locs[nd + k]] = outs[p["num_out_data"] + k]


def forward(octx, p, inputs, outputs, req):
    nod, ns = p["num_out_data"], len(p["in_state_locs"])
    steps = list(_steps(octx, p, inputs))
    states = steps[-1][nod:] if steps else inputs[len(p["in_data_locs"]):][:ns]
    for k in range(nod):
        for t, outs in enumerate(steps):
            write_outputs([row(outputs[k], t)], [req[k]], [outs[k]])
    write_outputs(outputs[nod:], req[nod:], states)


def backward(octx, p, inputs, outputs, req):
    nout, nod = p["num_outputs"], p["num_out_data"]
    nd, ns = len(p["in_data_locs"]), len(p["in_state_locs"])
    ograds, fwd_in = inputs[:nout], inputs[nout:]
    locs, graph = _sub_locs(p), p["subgraphs"][0]
    tapes = [tape for _, tape in _steps(octx, p, fwd_in, record=True)]
    grads = [None] * len(fwd_in)
    data_grads = [[None] * len(tapes) for _ in range(nd)]
    state_grads = list(ograds[nod:])
    for t in reversed(range(len(tapes))):
        head = [row(g, t) for g in ograds[:nod]] + state_grads
        sub_grads = service().grad(graph, tapes[t], head, octx)
        for k in range(nd):
            data_grads[k][t] = sub_grads[locs[k]]
        state_grads = [sub_grads[locs[nd + k]] for k in range(ns)]
        for k in range(nd + ns, len(locs)):
            g = sub_grads[locs[k]]
            if g is not None:
                grads[k] = g.copy() if grads[k] is None else grads[k] + g
    for k in range(nd):
        for t, g in enumerate(data_grads[k]):
            write_outputs([row(outputs[k], t)], [req[k]], [g])
    for k in range(ns):
        grads[nd + k] = state_grads[k]
    write_outputs(outputs[nd:], req[nd:], grads[nd:])


register_pair("_foreach", 1, forward, backward, PARAMS, _infer, __doc__)
