r"""``_cond``: run ``then`` or ``else`` (both subgraphs) as the ``cond`` subgraph's scalar says.

:math:`out = then(x)` if :math:`pred(x) \neq 0` else :math:`else(x)`; the gradient flows through
the branch that ran (the predicate is not differentiated), so inputs only the other branch reads
get zero gradient.
"""
from __future__ import annotations

from .common import (
    COMMON_PARAMS,
    gather,
    locs_param,
    merge,
    register_pair,
    scalar_bool,
    scatter_add,
    service,
    write_outputs,
)

PARAMS = dict(COMMON_PARAMS,
              cond_input_locs=locs_param("Node input feeding each input of the cond subgraph."),
              then_input_locs=locs_param("Node input feeding each input of the then subgraph."),
              else_input_locs=locs_param("Node input feeding each input of the else subgraph."))

_LOCS = ("cond_input_locs", "then_input_locs", "else_input_locs")


def _infer(kind):
    def rule(p, ins, outs):
        ins, outs = list(ins), list(outs)
        for _ in range(2):      # each branch informs the outputs, which inform the other branch
            for g, key in zip(p["subgraphs"], _LOCS):
                sub_in, sub_out = service().infer(g, kind, gather(ins, p[key]), [None] * len(
                    outs if key != "cond_input_locs" else [None]))
                if key != "cond_input_locs":
                    outs = [merge(kind, a, b, f"cond: output {k} of the then and else branches")
                            for k, (a, b) in enumerate(zip(outs, sub_out))]
                    sub_in, _ = service().infer(g, kind, sub_in, outs)   # outputs inform inputs
                for j, i in enumerate(p[key]):
                    ins[i] = merge(kind, ins[i], sub_in[j], f"cond: input {i}")
        return ins, outs
    return rule


def _branch(octx, p, inputs):
    """The subgraph and input locations of the branch the predicate picks."""
    (pred,) = service().run(p["subgraphs"][0], gather(inputs, p["cond_input_locs"]), octx)
    k = 1 if scalar_bool(pred, "cond: the result of pred") else 2
    return p["subgraphs"][k], p[_LOCS[k]]


def forward(octx, p, inputs, outputs, req):
    graph, locs = _branch(octx, p, inputs)
    write_outputs(outputs, req, service().run(graph, gather(inputs, locs), octx))


def backward(octx, p, inputs, outputs, req):
    ograds, fwd_in = inputs[:p["num_outputs"]], inputs[p["num_outputs"]:]
    graph, locs = _branch(octx, p, fwd_in)
    grads = [None] * len(fwd_in)
    _, tape = service().record(graph, gather(fwd_in, locs), octx)
    scatter_add(grads, locs, service().grad(graph, tape, ograds, octx))
    write_outputs(outputs, req, grads)


register_pair("_cond", 3, forward, backward, PARAMS, _infer, __doc__)
