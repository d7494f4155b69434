"""``mx.nd.contrib.foreach / while_loop / cond``: control flow run as a Python loop over NDArrays.

The imperative forms simply run the user's functions; under ``autograd.record()`` every operator
the body runs lands on the tape, so gradients flow through the loop with no special machinery.
The nested-list helpers ``flatten`` / ``regroup`` are shared with the symbolic forms
(``mxref/symbol/control_flow.py``), which trace the same functions into subgraphs.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

from ..base import MXNetError, _as_list

__all__ = ["foreach", "while_loop", "cond", "flatten", "regroup"]


def flatten(args, what: str, leaf_type: type, leaf_len: Callable[[Any], int] = lambda x: 0):
    """``(flat list, format)``: the leaves of a nested list and the shape of the nesting.

    A leaf's format is ``leaf_len(leaf)`` (0 for one array; a grouped Symbol of ``n > 1``
    outputs is ``n``), a list's is the list of its items' formats (MXNet's ``_flatten``).
    """
    if isinstance(args, leaf_type):
        return [args], leaf_len(args)
    if not isinstance(args, (list, tuple)):
        raise MXNetError(f"{what} must be a (nested) list of {leaf_type.__name__}, but got {args!r} "
                         f"of type {type(args).__name__}")
    flat, fmts = [], []
    for item in args:
        leaves, fmt = flatten(item, what, leaf_type, leaf_len)
        flat.extend(leaves)
        fmts.append(fmt)
    return flat, fmts


def regroup(args: list, fmt) -> Tuple[Any, list]:
    """Undo ``flatten``: ``(nested value, leftover leaves)``."""
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        return args[:fmt], args[fmt:]
    out = []
    for item in fmt:
        res, args = regroup(args, item)
        out.append(res)
    return out, args


def _nd():
    from .. import ndarray  # the package, for its generated operator functions
    return ndarray


def _scalar(value, type_, what: str):
    if isinstance(value, _nd().NDArray):
        value = value.asscalar()
    try:
        return type_(value)
    except (TypeError, ValueError):
        raise ValueError(f"Cannot convert {what} to python {type_.__name__}") from None


def foreach(body: Callable, data, init_states):
    """Run ``body(data[i], states) -> (outputs, states)`` for each slice ``i`` of ``data`` on axis 0.

    ``data`` and ``init_states`` are NDArrays or nested lists of them. Returns
    ``(outputs, states)``: each step output stacked along a new axis 0 (in the nesting ``body``
    returns), and the final states. In math: :math:`(y_i, s_{i+1}) = body(x_i, s_i)`,
    :math:`outputs = stack(y_0, ..., y_{n-1})`.
    """
    nd = _nd()
    flat_data, _ = flatten(data, "foreach input", nd.NDArray)      # both raise on a non-NDArray
    flatten(init_states, "foreach states", nd.NDArray)
    single = isinstance(data, nd.NDArray)
    states, steps, out_fmt = init_states, [], None
    for i in range(flat_data[0].shape[0]):
        outs, states = body(data[i] if single else [d[i] for d in data], states)
        outs, out_fmt = flatten(outs, "foreach output", nd.NDArray)
        steps.append(outs)
    outputs = [nd.stack(*items) for items in zip(*steps)]
    if out_fmt is not None:
        outputs, _ = regroup(outputs, out_fmt)
    return outputs, states


def while_loop(cond: Callable, func: Callable, loop_vars, max_iterations=None):
    """Run ``func(*loop_vars) -> (step_output, new_loop_vars)`` while ``cond(*loop_vars)`` holds,
    at most ``max_iterations`` times.

    Returns ``(outputs, loop_vars)``: each step output stacked on axis 0 and padded to
    ``max_iterations`` rows (with zeros; MXNet leaves them undefined), and the final loop
    variables (an NDArray if one was given). With no step run, ``outputs`` is ``[]``.
    """
    nd = _nd()
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _scalar(max_iterations, int, "max_iteration")
    if not isinstance(loop_vars, nd.NDArray) and len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    single = isinstance(loop_vars, nd.NDArray)
    loop_vars = _as_list(loop_vars)
    steps: List[list] = []
    out_fmt = None
    while len(steps) < max_iterations and _scalar(cond(*loop_vars), bool, "Return value of cond"):
        step_output, new_vars = func(*loop_vars)
        step_output = [] if step_output is None else step_output
        new_vars = _as_list([] if new_vars is None else list(new_vars) if isinstance(new_vars, tuple)
                            else new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError("The length of loop_vars should be consistent during the loop")
        loop_vars = new_vars
        flat, out_fmt = flatten(list(step_output) if isinstance(step_output, tuple) else step_output,
                                "while output", nd.NDArray)
        if steps and len(flat) != len(steps[0]):
            raise ValueError("Number of elements in step_output should be the same in each step")
        steps.append(flat)
    stacked = []
    for k, items in enumerate(zip(*steps), 1):
        rows = [x.expand_dims(0) for x in items]
        if len(steps) != max_iterations:
            rows.append(nd.zeros((max_iterations - len(steps),) + rows[0].shape[1:],
                                 ctx=rows[0].context, dtype=rows[0].dtype))
        shapes = {r.shape[1:] for r in rows}
        if len(shapes) > 1:
            raise ValueError(f"Shapes of {k}-th elements in step_outputs are inconsistent, which are: "
                             + ", ".join(f"step {i}: {x.shape}" for i, x in enumerate(items)))
        stacked.append(nd.concat(*rows, dim=0))
    if out_fmt is not None:
        stacked, _ = regroup(stacked, out_fmt)
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func: Callable, else_func: Callable):
    """``then_func()`` if the scalar ``pred`` is true, else ``else_func()``."""
    if _scalar(pred, bool, "pred"):
        return then_func()
    return else_func()
