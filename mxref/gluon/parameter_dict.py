"""Gluon ``ParameterDict``: Parameters by full name, made through ``get`` with a prefix, shared
between Blocks, selected by regular expression, and saved/loaded with ``mx.nd.save``/``load``."""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import List, Optional

import numpy as np

from .. import initializer
from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context
from .parameter import Constant, Parameter

__all__ = ["ParameterDict"]


class ParameterDict:
    """Parameters by full name, created through ``get`` with this dict's ``prefix``.

    ``shared`` (another ParameterDict) lends its parameters: ``get`` returns the shared one
    when it holds that name, which is how Blocks share weights (``params=other.params``).
    """

    def __init__(self, prefix: str = "", shared: Optional["ParameterDict"] = None):
        self._prefix = prefix
        self._params: "OrderedDict[str, Parameter]" = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        body = "\n".join(f"  {p!r}" for p in self.values())
        return f"{self._prefix} (\n{body}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, key) -> bool:
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self) -> str:
        """Prepended to every name given to ``get``."""
        return self._prefix

    def _get_impl(self, name: str) -> Optional[Parameter]:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name: str, **kwargs) -> Parameter:
        """The parameter ``prefix + name``, created with ``kwargs`` (Parameter's arguments) if new.

        An existing parameter must agree with ``kwargs``; unknown dimensions (0) are filled in.
        """
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = self._params[name] = Parameter(name, **kwargs)
            return param
        for k, v in kwargs.items():
            if not hasattr(param, k) or getattr(param, k) is None:
                setattr(param, k, v)
                continue
            existing = getattr(param, k)
            if k == "shape" and v is not None:
                v = (v,) if isinstance(v, int) else tuple(v)
                if len(v) == len(existing) and all(a == b or a in (0, -1) or b in (0, -1)
                                                   for a, b in zip(v, existing)):
                    param.shape = tuple(b if b > 0 else a for a, b in zip(existing, v))
                    continue
            elif k == "dtype" and np.dtype(v) == np.dtype(existing):
                continue
            if v is not None and v != existing:
                raise AssertionError(f"Cannot retrieve Parameter '{name}' because desired attribute does "
                                     f"not match with stored for attribute '{k}': desired '{v}' vs "
                                     f"stored '{existing}'.")
        return param

    def get_constant(self, name: str, value=None) -> Constant:
        """The Constant ``prefix + name`` (created from ``value`` if new)."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named '{name}'. Please specify value if you want to create "
                               "a new constant.")
            param = self._params[name] = Constant(name, value)
        elif value is not None and not isinstance(param, Constant):
            raise AssertionError(f"Parameter '{name}' already exists but it is not a constant.")
        return param

    def update(self, other: "ParameterDict") -> None:
        """Add ``other``'s parameters; the same name must mean the same Parameter object."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise ValueError(f"Cannot update self with other because they have different "
                                 f"Parameters with the same name '{k}'")
        for k, v in other.items():
            self._params[k] = v

    def select(self, select: Optional[str]) -> "ParameterDict":
        """The parameters whose name matches the regular expression ``select`` (``re.match``)."""
        ret = ParameterDict(self._prefix)
        if select is None:
            ret._params.update(self._params)
            return ret
        pattern = re.compile(select)
        ret._params.update((k, v) for k, v in self._params.items() if pattern.match(k))
        return ret

    def initialize(self, init=None, ctx=None, verbose: bool = False, force_reinit: bool = False) -> None:
        """Initialize every parameter (default ``Uniform(0.07)``)."""
        if init is None:
            init = initializer.Uniform()
        if verbose:
            init.set_verbosity(verbose=verbose)
        for p in self.values():
            p.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx) -> None:
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self) -> List[Context]:
        out = []
        for p in self.values():
            out.extend(c for c in p.list_ctx() if c not in out)
        return out

    def setattr(self, name: str, value) -> None:
        """Set an attribute (``grad_req``, ``lr_mult``, ...) on every parameter."""
        for p in self.values():
            setattr(p, name, value)

    def save(self, filename: str, strip_prefix: str = "") -> None:
        """Save the parameters with ``mx.nd.save`` under their names minus ``strip_prefix``."""
        arg_dict = {}
        for p in self.values():
            if not p.name.startswith(strip_prefix):
                raise ValueError(f"Prefix '{strip_prefix}' is to be striped before saving, but "
                                 f"Parameter's name '{p.name}' does not start with '{strip_prefix}'.")
            arg_dict[p.name[len(strip_prefix):]] = p._reduce()
        nd.save(filename, arg_dict)

    def load(self, filename: str, ctx=None, allow_missing: bool = False, ignore_extra: bool = False,
             restore_prefix: str = "", cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """Load parameters saved by ``save`` (names get ``restore_prefix``; ``arg:``/``aux:`` dropped)."""
        loaded = nd.load(filename) if isinstance(filename, str) else filename
        if not isinstance(loaded, dict):
            raise MXNetError(f"ParameterDict.load: {filename} holds a list of arrays, not named arrays")
        arg_dict = {restore_prefix + (k[4:] if k.startswith(("arg:", "aux:")) else k): v
                    for k, v in loaded.items()}
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise AssertionError(f"Parameter '{name[len(restore_prefix):]}' is missing in file "
                                         f"'{filename}'. Set allow_missing=True to ignore missing "
                                         "parameters.")
        for name, value in arg_dict.items():
            if name not in self._params:
                if not ignore_extra:
                    raise AssertionError(f"Parameter '{name[len(restore_prefix):]}' loaded from file "
                                         f"'{filename}' is not present in ParameterDict. Set "
                                         "ignore_extra=True to ignore.")
                continue
            self[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

