"""Gluon ``Parameter`` (an array per context, deferred initialization) and ``Constant``.

``ParameterDict`` lives in ``parameter_dict.py`` and is re-exported here.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import autograd, initializer
from .. import ndarray as nd
from .. import symbol as _symbol
from ..base import MXNetError
from ..context import Context, cpu, current_context
from ..ndarray.ndarray import NDArray

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict", "tensor_types"]

tensor_types = (_symbol.Symbol, NDArray)


class DeferredInitializationError(MXNetError):
    """A parameter's data was read before its deferred initialization ran (before the first forward)."""


def shape_is_known(shape) -> bool:
    """Whether every dimension is known (MXNet 1.x marks unknown dimensions with 0 or -1)."""
    return shape is not None and all(d > 0 for d in shape)


def _as_ctx_list(ctx) -> List[Context]:
    if ctx is None:
        return [current_context()]
    return [ctx] if isinstance(ctx, Context) else list(ctx)


class Parameter:
    """A weight of a Block: one NDArray (and one gradient) per context.

    Parameters
    ----------
    name : str
        Full name, e.g. ``dense0_weight``.
    grad_req : {'write', 'add', 'null'}
        How backward stores this parameter's gradient.
    shape : tuple of int, optional
        Unknown dimensions are 0; they are filled in by the first forward (deferred init).
    dtype, lr_mult, wd_mult, init, allow_deferred_init, differentiable, stype, grad_stype
        As in MXNet 1.x; ``init`` is an ``Initializer`` or its registered name ('zeros', 'ones').
    """

    # Bumped whenever any Parameter's arrays (or gradient buffers) are replaced: initialize, cast,
    # grad_req, reset_ctx. A hybridized block's executors are bound to the arrays themselves, so
    # it looks again at its parameters' arrays only when this has moved.
    arrays_version = 0

    def __setattr__(self, name: str, value) -> None:
        if name in ("_data", "_grad"):
            Parameter.arrays_version += 1
        object.__setattr__(self, name, value)

    def __init__(self, name: str, grad_req: str = "write", shape=None, dtype=np.float32,
                 lr_mult: float = 1.0, wd_mult: float = 1.0, init=None, allow_deferred_init: bool = False,
                 differentiable: bool = True, stype: str = "default", grad_stype: str = "default"):
        self._var: Optional[_symbol.Symbol] = None
        self._data: Optional[Dict[Context, NDArray]] = None
        self._grad: Optional[Dict[Context, NDArray]] = None
        self._deferred_init: tuple = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        if isinstance(shape, int):
            shape = (shape,)
        self._shape = None if shape is None else tuple(shape)
        self.name = name
        self._dtype = np.dtype(dtype)
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value not in ("default", "row_sparse", "csr"):     # an AssertionError, as in MXNet
                raise AssertionError(f"Parameter '{name}': {what} must be 'default', 'row_sparse' "
                                     f"or 'csr', got {value!r}")
        self._stype = stype
        self._grad_stype = grad_stype
        self.grad_req = grad_req

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype.type.__name__})"

    # -- attributes ---------------------------------------------------------------------------
    @property
    def grad_req(self) -> str:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in ("write", "add", "null"):
            raise ValueError(f"grad_req must be one of 'write', 'add', or 'null', but got '{req}'")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            self._data = OrderedDict((c, a.detach()) for c, a in self._data.items())
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self) -> np.dtype:
        """The parameter's dtype; setting it casts the arrays (``cast``), as in MXNet."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype) -> None:
        self.cast(dtype)

    @property
    def shape(self) -> Optional[Tuple[int, ...]]:
        return self._shape

    @shape.setter
    def shape(self, new_shape) -> None:
        new_shape = tuple(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or not all(
                j in (-1, 0, i) for i, j in zip(new_shape, self._shape)):
            raise AssertionError(f"Expected shape {new_shape} is incompatible with given shape "
                                 f"{self._shape} for Parameter {self.name}.")
        self._shape = new_shape

    @property
    def stype(self) -> str:
        return self._stype

    @property
    def grad_stype(self) -> str:
        return self._grad_stype

    # -- initialization -----------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit: bool = False) -> None:
        """Create the arrays on ``ctx`` (a Context or list) and fill them with the initializer.

        ``init`` wins over the parameter's own ``init``, which wins over ``default_init``
        (``Uniform(0.07)``). When a dimension is still unknown and the parameter allows it, the
        work waits until the first forward tells the shape (deferred initialization).
        """
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. Set "
                          "force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        ctx = _as_ctx_list(ctx)
        if default_init is None:
            default_init = initializer.Uniform()
        if init is None:
            init = default_init if self.init is None else self.init
        self._deferred_init = (init, ctx, default_init, None)
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                return
            self._deferred_init = ()
            raise ValueError(f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                             f"{self.shape}.")
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        """Run the initialization that ``initialize`` deferred (the shape is known by now)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        if not shape_is_known(self.shape):
            raise ValueError(f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                             f"{self.shape}. Please specify in_units, in_channels, etc for `Block`s.")
        with autograd.pause():
            if data is None:
                data = nd.zeros(self.shape, cpu(), self.dtype)
                # Gluon always calls the chosen initializer's weight rule: the parameter's own
                # init ('zeros' for biases, 'ones' for gamma) already encodes the suffix choice.
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {"__init__": init}), data)
            self._init_impl(data, ctx)

    def _init_impl(self, data: NDArray, ctx_list: Sequence[Context]) -> None:
        self._data = OrderedDict((c, data.copyto(c) if data.context != c or len(ctx_list) > 1
                                  else data.copy()) for c in ctx_list)
        if self._stype != "default":
            self._data = OrderedDict((c, a.tostype(self._stype)) for c, a in self._data.items())
        self._init_grad()

    def _init_grad(self) -> None:
        if self.grad_req == "null":
            self._grad = None
            return
        self._grad = OrderedDict((c, nd.zeros(a.shape, c, a.dtype, stype=self._grad_stype))
                                 for c, a in self._data.items())
        autograd.mark_variables(list(self._data.values()), list(self._grad.values()), self.grad_req)

    def _check_and_get(self, arrays, ctx):
        if arrays is not None:
            if ctx is list:
                return list(arrays.values())
            if ctx is None:
                if len(arrays) == 1:
                    return next(iter(arrays.values()))
                ctx = current_context()
            if ctx in arrays:
                return arrays[ctx]
            raise RuntimeError(f"Parameter '{self.name}' was not initialized on context {ctx}. It was "
                               f"only initialized on {list(arrays)}.")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization was "
                "deferred. Actual initialization happens during the first forward pass. Please pass one "
                "batch of data through the network before accessing Parameters. You can also avoid "
                "deferred initialization by specifying in_units, num_features, etc., for network layers.")
        raise RuntimeError(f"Parameter '{self.name}' has not been initialized. Note that you should "
                           "initialize parameters and create Trainer with Block.collect_params() instead "
                           "of Block.params because the later does not include Parameters of nested "
                           "child Blocks")

    # -- data access --------------------------------------------------------------------------
    def data(self, ctx: Optional[Context] = None) -> NDArray:
        """This parameter's array on ``ctx`` (the only one, or the current context's)."""
        return self._check_and_get(self._data, ctx)

    def list_data(self) -> List[NDArray]:
        """The arrays on every context, in ``list_ctx()`` order."""
        return self._check_and_get(self._data, list)

    def row_sparse_data(self, row_id: NDArray) -> NDArray:
        """The row_sparse array of this parameter on ``row_id``'s context, holding (at least) the
        rows ``row_id`` names: with a Trainer whose store pulls rows (``_row_sparse_pull``), those
        rows are pulled into it first; locally it already holds every row."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name} via row_sparse_data() "
                               f"because its storage type is {self._stype}. Please use data() instead.")
        arr = self._check_and_get(self._data, row_id.context)
        pull = getattr(getattr(self, "_trainer", None), "_row_sparse_pull", None)
        if pull is not None:
            pull(self, arr, row_id)
        return arr

    def list_row_sparse_data(self, row_id: NDArray) -> List[NDArray]:
        """``row_sparse_data`` on every context."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return copies of Parameter '{self.name}' via "
                               f"list_row_sparse_data() because its storage type is {self._stype}. "
                               "Please use list_data() instead.")
        return [self.row_sparse_data(row_id.as_in_context(c)) for c in self.list_ctx()]

    def grad(self, ctx: Optional[Context] = None) -> NDArray:
        """The gradient buffer on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter '{self.name}' because "
                               "grad_req='null'")
        return self._check_and_get(self._grad, ctx)

    def list_grad(self) -> List[NDArray]:
        """The gradient buffers on every context."""
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter '{self.name}' because "
                               "grad_req='null'")
        return self._check_and_get(self._grad, list)

    def list_ctx(self) -> List[Context]:
        """The contexts holding this parameter (or those its deferred init will use)."""
        if self._data is None:
            if self._deferred_init:
                return list(self._deferred_init[1])
            raise RuntimeError(f"Parameter '{self.name}' has not been initialized")
        return list(self._data)

    def set_data(self, data) -> None:
        """Copy ``data`` into the arrays on every context (or keep it for the deferred init)."""
        self.shape = tuple(data.shape)
        if self._data is None:
            if not self._deferred_init:
                raise RuntimeError(f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        for arr in self._data.values():
            arr[:] = data

    def zero_grad(self) -> None:
        """Set the gradient buffers to 0 (needed between steps with ``grad_req='add'``)."""
        if self._grad is None:
            return
        for g in self._grad.values():
            g[:] = 0

    def _reduce(self) -> NDArray:
        """The mean of the copies, on the CPU (what ``save`` writes)."""
        arrays = self.list_data()
        if len(arrays) == 1:
            return arrays[0].copyto(cpu())
        return nd.add_n(*[a.copyto(cpu()) for a in arrays]) / len(arrays)

    def reset_ctx(self, ctx) -> None:
        """Move the parameter (data, and gradient buffers) to other contexts."""
        ctx = _as_ctx_list(ctx)
        if self._data is not None:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError(f"Cannot reset context for Parameter '{self.name}' because it has not "
                             "been initialized.")

    def _load_init(self, data: NDArray, ctx=None, cast_dtype: bool = False,
                   dtype_source: str = "current") -> None:
        """Take ``data`` (loaded from a file) as this parameter's value, initializing it if needed."""
        if data.stype != self._stype:
            data = data.tostype(self._stype)     # a sparse file value for a dense parameter, or back
        if self.shape:
            unknown_ok = all(j in (0, -1, i) for i, j in zip(data.shape, self.shape))
            if len(self.shape) != len(data.shape) or not unknown_ok:
                raise AssertionError(f"Failed loading Parameter '{self.name}' from saved params: shape "
                                     f"incompatible expected {self.shape} vs saved {data.shape}")
            self.shape = tuple(data.shape)
        if self.dtype != data.dtype:
            if not cast_dtype:
                raise AssertionError(f"Failed loading Parameter '{self.name}' from saved params: dtype "
                                     f"incompatible expected {self.dtype} vs saved {data.dtype}. Set "
                                     "cast_dtype=True to cast the dtype of saved params.")
            if dtype_source == "saved":
                self.dtype = data.dtype
            else:
                data = data.astype(self.dtype)
        if self._data is None:
            if self._deferred_init:
                ctx = self._deferred_init[1]
            ctx = [cpu()] if ctx is None else _as_ctx_list(ctx)
            self._deferred_init = ()
            self._init_impl(data, ctx)
        else:
            self.set_data(data)
        self._deferred_init = ()

    def var(self) -> _symbol.Symbol:
        """The symbol variable standing for this parameter in a traced graph (made once)."""
        if self._var is None:
            self._var = _symbol.var(self.name, shape=self.shape, dtype=self.dtype, lr_mult=self.lr_mult,
                                    wd_mult=self.wd_mult, init=self.init, stype=self._stype)
        return self._var

    def cast(self, dtype) -> None:
        """Change the dtype of the data and gradient arrays (``float16`` for mixed precision)."""
        self._dtype = np.dtype(dtype)
        self._var = None
        if self._data is None:
            return
        with autograd.pause():
            self._data = OrderedDict((c, a.astype(self.dtype)) for c, a in self._data.items())
            if self._grad is None:
                return
            self._grad = OrderedDict((c, g.astype(self.dtype)) for c, g in self._grad.items())  # stype kept
            autograd.mark_variables(list(self._data.values()), list(self._grad.values()), self.grad_req)


class _ConstantInit(initializer.Initializer):
    """Fills an array with a Constant's value."""

    def __init__(self, value):
        super().__init__()
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value

    def dumps(self) -> str:
        return initializer.Constant(0).dumps()   # a creatable stand-in for the graph attribute


class Constant(Parameter):
    """A parameter that never changes (``grad_req='null'``), initialized with ``value``.

    Examples
    --------
    >>> const = mx.gluon.Constant('const', [[1, 2], [3, 4]])
    """

    def __init__(self, name: str, value):
        if not isinstance(value, NDArray):
            value = nd.array(value)
        self.value = value
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=_ConstantInit(value.asnumpy()))

    def __repr__(self) -> str:
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype.type.__name__})"

    @property
    def grad_req(self) -> str:
        return "null"

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != "null":
            warnings.warn(f'Constant parameter "{self.name}" does not support grad_req other than '
                          f'"null", and new value "{req}" is ignored.', stacklevel=2)
        self._grad_req = "null"


from .parameter_dict import ParameterDict  # noqa: E402 - it builds Parameters
