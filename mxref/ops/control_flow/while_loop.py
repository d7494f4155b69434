r"""``_while_loop``: run ``func`` while ``cond`` holds, at most ``max_iterations`` times.

Loop variables :math:`v_0` and free inputs :math:`p`; while :math:`cond(v_t, p)` and
:math:`t < max\_iterations`: :math:`(y_t, v_{t+1}) = func(v_t, p)`. After ``n`` steps the outputs
are :math:`stack(y_0..y_{n-1})` padded with zeros to ``max_iterations`` rows (MXNet leaves the
padding undefined) and :math:`v_n`. The backward replays the ``n`` steps and runs ``func``'s
gradient in reverse; the padding rows get no gradient, ``cond`` is not differentiated.
"""
from __future__ import annotations

from ..registry import Param
from .common import (
    COMMON_PARAMS,
    gather,
    locs_param,
    merge,
    register_pair,
    row,
    scalar_bool,
    scatter_add,
    service,
    stack,
    unstack,
    write_outputs,
)

PARAMS = dict(COMMON_PARAMS,
              num_out_data=Param("int", doc="Number of step outputs (stacked along axis 0)."),
              max_iterations=Param("int", doc="Most steps run; the stacked outputs have this many rows."),
              cond_input_locs=locs_param("Node input feeding each input of the cond subgraph."),
              func_input_locs=locs_param("Node input feeding each input of the func subgraph."),
              func_var_locs=locs_param("Position among func's inputs of each loop variable."))


def _var_inputs(p):
    """The node input holding each loop variable's initial value."""
    return [p["func_input_locs"][j] for j in p["func_var_locs"]]


def _infer(kind):
    def rule(p, ins, outs):
        cond_g, func_g = p["subgraphs"]
        nod, var_in = p["num_out_data"], _var_inputs(p)
        ins = list(ins)
        sub_out = [unstack(kind, v) for v in outs[:nod]] + list(outs[nod:])
        for _ in range(2):      # a loop variable's value flows from func's output into its input
            func_in, sub_out = service().infer(func_g, kind, gather(ins, p["func_input_locs"]), sub_out)
            for j, i in enumerate(p["func_input_locs"]):
                ins[i] = merge(kind, ins[i], func_in[j], f"while_loop: input {i}")
            for k, i in enumerate(var_in):
                ins[i] = sub_out[nod + k] = merge(
                    kind, ins[i], sub_out[nod + k],
                    f"while_loop: loop variable {k} at the loop's start and as func returns it")
            cond_in, _ = service().infer(cond_g, kind, gather(ins, p["cond_input_locs"]), [None])
            for j, i in enumerate(p["cond_input_locs"]):
                ins[i] = merge(kind, ins[i], cond_in[j], f"while_loop: input {i}")
        return ins, [stack(kind, v, p["max_iterations"]) for v in sub_out[:nod]] + list(sub_out[nod:])
    return rule


def _steps(octx, p, inputs, record=False):
    """Run the loop; returns each step's outputs, the final loop variables and, when recording
    for the backward (which replays the forward), each step's tape."""
    cond_g, func_g = p["subgraphs"]
    cur, var_in, nod = list(inputs), _var_inputs(p), p["num_out_data"]
    outs, tapes = [], []
    while len(outs) < p["max_iterations"]:
        (pred,) = service().run(cond_g, gather(cur, p["cond_input_locs"]), octx)
        if not scalar_bool(pred, "while_loop: the result of cond"):
            break
        feed = gather(cur, p["func_input_locs"])
        if record:
            step, tape = service().record(func_g, feed, octx)
            tapes.append(tape)
        else:
            step = service().run(func_g, feed, octx)
        outs.append(step[:nod])
        for k, i in enumerate(var_in):
            cur[i] = step[nod + k]
    return outs, [cur[i] for i in var_in], tapes


def forward(octx, p, inputs, outputs, req):
    nod = p["num_out_data"]
    outs, final, _ = _steps(octx, p, inputs)
    for k in range(nod):
        for t in range(p["max_iterations"]):
            write_outputs([row(outputs[k], t)], [req[k]], [outs[t][k] if t < len(outs) else None])
    write_outputs(outputs[nod:], req[nod:], final)


def backward(octx, p, inputs, outputs, req):
    nout, nod, func_g = p["num_outputs"], p["num_out_data"], p["subgraphs"][1]
    ograds, fwd_in = inputs[:nout], inputs[nout:]
    var_in, locs = _var_inputs(p), p["func_input_locs"]
    _, _, tapes = _steps(octx, p, fwd_in, record=True)
    grads = [None] * len(fwd_in)
    var_grads = list(ograds[nod:])
    for t in reversed(range(len(tapes))):
        head = [row(g, t) for g in ograds[:nod]] + var_grads
        sub_grads = service().grad(func_g, tapes[t], head, octx)
        var_grads = [sub_grads[j] for j in p["func_var_locs"]]
        rest = [None if j in p["func_var_locs"] else g for j, g in enumerate(sub_grads)]
        scatter_add(grads, locs, rest)
    for k, i in enumerate(var_in):
        grads[i] = var_grads[k] if grads[i] is None or var_grads[k] is None else grads[i] + var_grads[k]
    write_outputs(outputs, req, grads)


register_pair("_while_loop", 2, forward, backward, PARAMS, _infer, __doc__)
