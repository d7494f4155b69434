"""Graph pass ``infer_type``: the dtype of every entry, by the same sweep as ``infer_shape``.

Known dtypes come from the caller, from variables' ``__dtype__`` attribute (MXNet's type flag,
``'2'`` for float16) and from operator rules (``infer_type`` of each ``OpDef``); ``None`` is unknown.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Union

import numpy as np

from ..base import normalize_dtype
from ..graph import Graph, register_pass
from .infer_shape import AttrRule, infer_graph_attr

__all__ = ["infer_type", "DTYPE_RULE"]


def _merge_dtype(old: Optional[np.dtype], new) -> Optional[np.dtype]:
    if new is None:
        return old
    new = normalize_dtype(new)
    if old is not None and old != new:
        raise ValueError
    return new


DTYPE_RULE = AttrRule("dtype", lambda op: op.infer_type, "__dtype__", lambda s: normalize_dtype(int(s)),
                      lambda t: t is not None, _merge_dtype,
                      lambda t: "unknown" if t is None else np.dtype(t).name, "infer_type")


@register_pass("infer_type", requires=(), provides=("dtype", "dtype_num_unknown_nodes"))
def infer_type(graph: Graph, dtype_inputs: Union[Dict[str, object], Sequence[object], None] = None,
               **_) -> Graph:
    """Dtypes of every entry (``graph.attrs['dtype']``, numpy dtypes or ``None``).

    ``dtype_inputs`` maps variable names to dtypes (or lists them in ``indexed.input_nodes``
    order); ``graph.attrs['dtype_inputs']`` is used when it is not given.
    """
    if dtype_inputs is None:
        dtype_inputs = graph.attrs.get("dtype_inputs")
    return infer_graph_attr(graph, DTYPE_RULE, dtype_inputs)
