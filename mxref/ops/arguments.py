"""``get_operator_arguments``: an operator's inputs and parameters with MXNet's type strings."""
from __future__ import annotations

import collections

import numpy as np

from ..base import MXNetError
from . import registry

__all__ = ["OperatorArguments", "get_operator_arguments"]

OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])

# MXNet's names of the parameter types (dmlc::Parameter's type strings)
_TYPE_NAMES = {"int": "int", "float": "float", "bool": "boolean", "str": "string",
               "shape": "Shape(tuple)", "float_tuple": "tuple of <float>", "dtype": "int",
               "int_or_none": "int or None", "float_or_none": "float or None",
               "axis": "Shape or None", "any": "string"}


def _value(v, quoted: bool) -> str:
    """A default as dmlc prints it: booleans as 0/1, shapes as ``[a,b]``, enum values quoted."""
    if isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, tuple):
        return "[" + ",".join(str(x) for x in v) + "]"
    if isinstance(v, np.dtype):
        v = v.name
    return f"'{v}'" if quoted or isinstance(v, str) else str(v)


_DTYPES = ("bfloat16", "bool", "float16", "float32", "float64", "int32", "int64", "int8", "uint8")


def _param_type(p: registry.Param) -> str:
    choices = p.choices or (_DTYPES + ((None,) if p.default is None else ()) if p.type == "dtype"
                            else None)
    if choices:
        values = sorted(c for c in choices if c is not None)
        text = "{" + ", ".join(([] if None not in choices else ["None"]) +
                               [f"'{c}'" for c in values]) + "}"
        # NOTE: dmlc writes an enum's optional part without the space after the comma
        if p.default is registry.REQUIRED:
            return text + ", required"
        return text + ",optional, default=" + _value(p.default, quoted=True)
    name = _TYPE_NAMES[p.type]
    if p.default is registry.REQUIRED:
        return name + ", required"
    return f"{name}, optional, default={_value(p.default, quoted=p.type.endswith('_or_none'))}"


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """The number, names and type strings of ``op_name``'s arguments: its inputs
    (``'NDArray-or-Symbol'``; ``'NDArray-or-Symbol[]'`` for a variable number) then its parameters
    (``"{'relu', 'sigmoid', ...}, required"``, ``'float, optional, default=0.25'``)."""
    if not registry.exists(op_name):
        raise MXNetError(f"get_operator_arguments: no operator named {op_name!r}")
    op = registry.get(op_name)
    names, types = [], []
    if op.key_var_num_args:
        names, types = ["args"], ["NDArray-or-Symbol[]"]
    else:
        defaults = {k: (None if p.default is registry.REQUIRED else p.default)
                    for k, p in op.params.items()}
        inputs = op.list_inputs(defaults)
        names, types = list(inputs), ["NDArray-or-Symbol"] * len(inputs)
    for k, p in op.params.items():
        if k != op.key_var_num_args:
            names.append(k)
            types.append(_param_type(p))
    return OperatorArguments(len(names), names, types)
