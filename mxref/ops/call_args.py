"""How MXNet's generated ``mx.nd.<op>`` / ``mx.sym.<op>`` functions read positional arguments."""
from __future__ import annotations

from typing import Callable, List, Sequence, Tuple

from ..base import MXNetError
from .registry import OpDef


def positional_layout(op: OpDef, func_name: str, input_names: Sequence[str], args: tuple,
                      is_input: Callable[[object], bool]) -> Tuple[int, int, List[str]]:
    """``(n_lead, slots, param_names)`` for a call ``f(*args)``.

    The leading ``args`` that are inputs (or ``None``, an input left out) are ``args[:n_lead]``;
    the values after them fill the parameters in order, after the input slots, as in MXNet's
    generated signature (``nd.reshape(x, (2, 3))``). There are at least as many slots as the
    operator's default input list has, so ``FullyConnected(x, w, None, 4)`` skips ``bias``.
    """
    n_lead = 0
    while n_lead < len(args) and (args[n_lead] is None or is_input(args[n_lead])):
        n_lead += 1
    slots = max(n_lead, len(input_names))
    param_names = [k for k in op.params if k not in input_names]
    if len(args) > slots + len(param_names):
        raise MXNetError(f"{func_name}() takes at most {slots + len(param_names)} positional "
                         f"arguments ({', '.join(list(input_names) + param_names)}), got {len(args)}")
    return n_lead, slots, param_names
