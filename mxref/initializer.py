"""Weight initializers (``mx.init`` / ``mx.initializer``): fill a parameter according to its name.

An initializer is called as ``init(InitDesc(name, attrs), arr)``. The name's suffix picks the
rule (MXNet 1.x): ``*weight`` gets the initializer's own ``_init_weight``; ``*bias`` and
``*beta`` 0; ``*gamma`` 1; ``*min`` 0; ``*max`` 1. Any other name raises ``ValueError``. A
variable's ``__init__`` attribute (a JSON ``'["name", {kwargs}]'``) overrides the suffix rule:
that is how ``moving_mean`` starts at 0 and ``moving_var`` at 1.

Random initializers draw with ``mx.nd.random`` (the engine's seeded generator), so
``mx.random.seed(s)`` makes initialization reproducible.
"""
from __future__ import annotations

import json
import logging
import re
import warnings
from math import sqrt
from typing import Dict, List, Optional

import numpy as np

from . import ndarray as nd
from . import registry
from .ndarray import NDArray

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero", "One",
           "Constant", "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu", "Bilinear",
           "LSTMBias", "FusedRNN"]


class InitDesc(str):
    """A parameter name carrying its symbol attributes and the global initializer.

    Parameters
    ----------
    name : str
        The variable's name; its suffix selects the rule.
    attrs : dict of str to str, optional
        The variable's attributes (``Symbol.attr_dict()[name]``); ``__init__`` overrides the rule.
    global_init : Initializer, optional
        The initializer in charge overall (set on first use if missing).
    """

    def __new__(cls, name: str, attrs: Optional[Dict[str, str]] = None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


def _random_fill(arr, kind: str, a: float, b: float) -> None:
    """Fill ``arr`` from ``mx.nd.random.<kind>(a, b)``; writes straight into NDArrays (in-engine)."""
    draw = nd.random.uniform if kind == "uniform" else nd.random.normal
    if isinstance(arr, NDArray):
        # ctx: the array's own, not the default context (a deferred init runs inside a Block's
        # forward, under ``with x.context``, while Gluon initializes on the CPU then copies).
        draw(a, b, shape=arr.shape, dtype=arr.dtype, ctx=arr.context, out=arr)
    else:
        arr[...] = draw(a, b, shape=arr.shape).asnumpy()


class Initializer:
    """Base class: suffix dispatch, ``dumps``, verbosity; subclasses define ``_init_weight``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose: bool = False, print_func=None) -> "Initializer":
        """Log a statistic of each initialized array (default: ``norm(x)/sqrt(size)``)."""
        self._verbose = verbose
        if print_func is None:
            def print_func(x):
                return str((nd.norm(x) / sqrt(x.size)).asscalar())
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr) -> None:
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self) -> str:
        """The initializer as MXNet's JSON ``'["name", {kwargs}]'`` (``create`` reads it back)."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, desc, arr) -> None:
        """Initialize ``arr`` according to ``desc`` (an ``InitDesc``; a plain ``str`` takes the
        deprecated name-only path, which also knows ``moving_*``, ``upsampling*`` and ``stn_loc*``)."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in (("weight", self._init_weight), ("bias", self._init_bias),
                               ("gamma", self._init_gamma), ("beta", self._init_beta),
                               ("min", self._init_zero), ("max", self._init_one),
                               ("weight_quantize", self._init_quantized_weight),
                               ("bias_quantize", self._init_zero)):
            if desc.endswith(suffix):
                method(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr) -> None:
        warnings.warn("Calling initializer with init(str, NDArray) has been deprecated. please use "
                      "init(mx.init.InitDesc(...), NDArray) instead.", DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError("name must be string")
        if not isinstance(arr, NDArray):
            raise TypeError("arr must be NDArray")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            rules = (("bias", self._init_bias), ("gamma", self._init_gamma), ("beta", self._init_beta),
                     ("weight", self._init_weight), ("moving_mean", self._init_zero),
                     ("moving_var", self._init_one), ("moving_inv_var", self._init_zero),
                     ("moving_avg", self._init_zero), ("min", self._init_zero), ("max", self._init_one))
            for suffix, method in rules:
                if name.endswith(suffix):
                    method(name, arr)
                    return
            self._init_default(name, arr)

    # -- the rules -------------------------------------------------------------------------
    def _init_bilinear(self, _, arr) -> None:
        arr[:] = _bilinear_kernel(arr.shape)

    def _init_loc_bias(self, _, arr) -> None:
        if arr.shape[0] != 6:
            raise ValueError(f"stn_loc bias must have 6 elements, got shape {arr.shape}")
        arr[:] = np.array([1.0, 0, 0, 0, 1.0, 0])   # the identity affine transform

    def _init_zero(self, _, arr) -> None:
        arr[:] = 0.0

    def _init_one(self, _, arr) -> None:
        arr[:] = 1.0

    def _init_bias(self, _, arr) -> None:
        arr[:] = 0.0

    def _init_gamma(self, _, arr) -> None:
        arr[:] = 1.0

    def _init_beta(self, _, arr) -> None:
        arr[:] = 0.0

    def _init_quantized_weight(self, _, arr) -> None:
        arr[:] = nd.random.randint(-127, 127, shape=arr.shape, dtype="int32").asnumpy().astype(np.int8)

    def _init_weight(self, name, arr) -> None:
        raise NotImplementedError("Must override it")

    def _init_default(self, name, _) -> None:
        raise ValueError(f"Unknown initialization pattern for {name}. Default initialization is now "
                         'limited to "weight", "bias", "gamma" (1.0), and "beta" (0.0). Please use '
                         "mx.sym.Variable(init=mx.init.*) to set initialization pattern")

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = None


def _bilinear_kernel(shape) -> np.ndarray:
    """Weights of a bilinear upsampling filter (for ``Deconvolution`` used as upsampling)."""
    f = np.ceil(shape[3] / 2.)
    c = (2 * f - 1 - f % 2) / (2. * f)
    x = np.arange(shape[3])
    y = np.arange(shape[2])
    kernel = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c)).astype(np.float32)
    return np.broadcast_to(kernel, shape)


_register = registry.get_register_func(Initializer, "initializer")
alias = registry.get_alias_func(Initializer, "initializer")
create = registry.get_create_func(Initializer, "initializer")


def register(klass: type) -> type:
    """Register an ``Initializer`` subclass under its lower-cased name (so ``create`` finds it)."""
    return _register(klass)


class Load:
    """Initialize from saved arrays (a ``.params`` file or a dict), else from ``default_init``.

    ``arg:`` / ``aux:`` prefixes of the saved names are dropped.
    """

    def __init__(self, param, default_init=None, verbose: bool = False):
        if isinstance(param, str):
            param = nd.load(param)
        if not isinstance(param, dict):
            raise ValueError(f"Load needs a dict of arrays or a file of named arrays, got {type(param)}")
        self.param = {(k[4:] if k.startswith(("arg:", "aux:")) else k): v for k, v in param.items()}
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr) -> None:
        if name in self.param:
            src = self.param[name]
            if tuple(arr.shape) != tuple(src.shape):
                raise ValueError(f"Parameter {name} cannot be initialized from loading. Shape mismatch, "
                                 f"target {arr.shape} vs loaded {src.shape}")
            arr[:] = src.asnumpy() if hasattr(src, "asnumpy") else src
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise ValueError(f"Cannot Initialize {name}. Not found in loaded param and no default "
                                 "Initializer is provided.")
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed:
    """Pick the initializer by the first regular expression (``re.match``) matching the name."""

    def __init__(self, patterns: List[str], initializers: List[Initializer]):
        if len(patterns) != len(initializers):
            raise ValueError(f"Mixed: {len(patterns)} patterns but {len(initializers)} initializers")
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError(f"Parameter name {name} did not match any pattern. Consider add a \".*\" "
                         "pattern at the and with default Initializer.")


@register
@alias("zeros")
class Zero(Initializer):
    """Weights 0."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Weights 1."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Weights set to ``value`` (a number or an array of the weight's shape); biases still 0."""

    def __init__(self, value):
        # The recorded value is JSON-ready (an array as nested lists), as MXNet's ``dumps`` leaves
        # it: ``dumps() == json.dumps([name, _kwargs])`` holds for arrays too.
        recorded = value
        if not np.isscalar(value):
            recorded = value.tolist() if isinstance(value, np.ndarray) else \
                value.asnumpy().tolist() if hasattr(value, "asnumpy") else value
        super().__init__(value=recorded)
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value.asnumpy() if hasattr(self.value, "asnumpy") else self.value


@register
class Uniform(Initializer):
    """Weights drawn uniformly from ``[-scale, scale]`` (default 0.07, Gluon's default)."""

    def __init__(self, scale: float = 0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _random_fill(arr, "uniform", -self.scale, self.scale)


@register
class Normal(Initializer):
    """Weights drawn from N(0, ``sigma``²) (default sigma 0.01)."""

    def __init__(self, sigma: float = 0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _random_fill(arr, "normal", 0, self.sigma)


@register
class Orthogonal(Initializer):
    """Weights ``scale`` times an orthogonal matrix (Saxe et al., 2013), from the SVD of a random
    ``(shape[0], prod(shape[1:]))`` matrix drawn with ``rand_type`` 'uniform' or 'normal'."""

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout, nin = arr.shape[0], int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = nd.random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        elif self.rand_type == "normal":
            tmp = nd.random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            raise ValueError(f"Orthogonal: rand_type must be 'uniform' or 'normal', got {self.rand_type!r}")
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = self.scale * res.reshape(arr.shape)


@register
class Xavier(Initializer):
    """Xavier/Glorot: uniform on ``[-c, c]`` (or normal with std ``c``), ``c = sqrt(magnitude/factor)``.

    ``factor`` is ``(fan_in + fan_out)/2``, ``fan_in`` or ``fan_out`` (``factor_type`` 'avg', 'in',
    'out'), with fans ``shape[1]`` and ``shape[0]`` multiplied by the kernel area ``prod(shape[2:])``.
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(f"Xavier initializer cannot be applied to vector {name}. It requires at "
                             "least 2D.")
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factors = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        if self.factor_type not in factors:
            raise ValueError("Incorrect factor type")
        scale = float(np.sqrt(self.magnitude / factors[self.factor_type]))
        if self.rnd_type == "uniform":
            _random_fill(arr, "uniform", -scale, scale)
        elif self.rnd_type == "gaussian":
            _random_fill(arr, "normal", 0, scale)
        else:
            raise ValueError("Unknown random type")


@register
class MSRAPrelu(Xavier):
    """He et al. (2015) for PReLU: Xavier 'gaussian' with ``magnitude = 2 / (1 + slope²)``."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25):
        super().__init__("gaussian", factor_type, 2. / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Bilinear upsampling weights for a ``(C, 1, k, k)`` deconvolution kernel."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)


@register
class LSTMBias(Initializer):
    """LSTM biases 0 except the forget gate's (the second quarter), set to ``forget_bias``."""

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        num_hidden = int(arr.shape[0] / 4)
        value = np.zeros(arr.shape, dtype=np.float32)
        value[num_hidden:2 * num_hidden] = self.forget_bias
        arr[:] = value


@register
class FusedRNN(Initializer):
    """Initialize the flat ``parameters`` vector of a ``FusedRNNCell`` (the ``RNN`` operator).

    The vector is unpacked into its per-layer, per-direction, per-gate arrays
    (``FusedRNNCell.unpack_weights``); each is initialized by ``init`` (or the global initializer)
    by its name's suffix, except an LSTM's forget-gate biases (``*_f_bias``), set to
    ``forget_bias``; then the arrays are packed back.

    Parameters
    ----------
    init : Initializer or str or None
        For the unpacked arrays; a JSON string (``dumps()``) is read back; None: the global one.
    num_hidden, num_layers, mode, bidirectional, forget_bias
        As given to the ``FusedRNNCell``.
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False, forget_bias=1.0):
        if isinstance(init, str):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                         forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        from .rnn.fused import FusedRNNCell  # facade: the packed layout belongs to the cell
        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode, self._bidirectional,
                            forget_bias=self._forget_bias, prefix="")
        args = cell.unpack_weights({"parameters": arr})
        for name in args:
            arg_desc = InitDesc(name, global_init=desc.global_init)
            if self._mode == "lstm" and name.endswith("_f_bias"):
                args[name][:] = self._forget_bias
            elif self._init is None:
                desc.global_init(arg_desc, args[name])
            else:
                self._init(arg_desc, args[name])
        arr[:] = cell.pack_weights(args)["parameters"]
