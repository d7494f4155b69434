"""Testing helpers with MXNet 1.x's names: tolerant comparison, numeric gradients, symbolic checks,
consistency across dtypes and kernels, reproducible seeds, and ``OpTestCase`` for declarative op tests.

Gradients are always computed by the real ``Executor``; a numeric gradient is a central difference
of ``f(x) = sum_i <output_i, proj_i>`` for a fixed random projection ``proj`` (which is also the
head gradient fed to ``backward``), so every output of a multi-output symbol is checked.

Comparisons, random data, the environment and test-running helpers live in ``mxref/testing/``
(one concern per module); this module gathers them, so ``mxref.test_utils`` is the one import path.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import random as _pyrandom
import struct
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

import mxref as mx

from . import resource as _resource
from ._ext.switch import reference_kernels
from .base import MXNetError
from .context import Context, current_context
from .graph import Node, NodeEntry
from .ndarray import imperative
from .ndarray.ndarray import NDArray
from .ndarray.utils import array, waitall
from .op_check import check_kernels, check_op_gradient, fast_and_reference, kernel_calls, run_op
from .ops import registry as _registry
from .symbol.symbol import Symbol
from .testing.arrays import (
    assign_each,
    assign_each2,
    collapse_sum_like,
    create_sparse_array,
    create_sparse_array_zd,
    create_vector,
    np_reduce,
    rand_coord_2d,
    rand_ndarray,
    rand_shape_2d,
    rand_shape_3d,
    rand_shape_nd,
    rand_sparse_ndarray,
    random_arrays,
    random_sample,
    random_uniform_arrays,
    shuffle_csr_column_indices,
)
from .testing.compare import (
    _EPS,
    almost_equal,
    almost_equal_ignore_nan,
    assert_allclose,
    assert_almost_equal,
    assert_almost_equal_ignore_nan,
    assert_almost_equal_with_err,
    assert_exception,
    default_atols,
    default_numeric_eps,
    default_rtols,
    effective_dtype,
    get_atol,
    get_etol,
    get_rtol,
    get_tolerance,
    get_tols,
    same,
    same_array,
)
from .testing.data import DummyIter
from .testing.environ import discard_stderr, environment, set_env_var
from .testing.runs import has_tvm_ops, is_cd_run, is_op_runnable, retry
from .util import getenv, setenv, use_np

# MXNet's test_utils has no ``__all__``, so ``from mxnet.test_utils import *`` also hands its
# tests the modules it imported; its tests rely on that, hence the last line of names.
__all__ = ["default_context", "set_default_context", "default_dtype", "default_rtols", "default_atols",
           "default_numeric_eps", "get_tolerance", "get_tols", "get_rtol", "get_atol", "get_etol", "same",
           "almost_equal", "assert_almost_equal", "assert_allclose", "assert_exception",
           "almost_equal_ignore_nan", "assert_almost_equal_ignore_nan", "assert_almost_equal_with_err",
           "same_array", "effective_dtype",
           "random_arrays", "random_uniform_arrays", "random_sample", "rand_shape_2d", "rand_shape_3d",
           "rand_shape_nd", "rand_ndarray", "rand_sparse_ndarray", "create_sparse_array",
           "create_sparse_array_zd", "shuffle_csr_column_indices", "rand_coord_2d", "assign_each",
           "assign_each2", "create_vector", "np_reduce", "collapse_sum_like",
           "environment", "set_env_var", "discard_stderr", "getenv", "setenv", "use_np",
           "retry", "has_tvm_ops", "is_op_runnable", "is_cd_run", "DummyIter", "Context", "Symbol",
           "current_context",
           "simple_forward", "numeric_grad", "check_numeric_gradient", "check_symbolic_forward",
           "check_symbolic_backward", "check_consistency", "check_speed", "reference_kernels", "with_seed",
           "OpTestCase", "check_kernels", "check_op_gradient", "fast_and_reference", "kernel_calls",
           "run_op",
           "mx", "np", "npt", "rnd", "sys", "os", "logging", "struct", "array"]


def default_context() -> Context:
    """The context tests run on: this thread's default context (``mx.current_context()``)."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` this thread's default context, as MXNet's ``set_default_context`` does
    (``with ctx:`` blocks still nest on top of it)."""
    Context._local.value = ctx


def default_dtype():
    return np.float32


# ---------------------------------------------------------------------------------------------
# symbolic checks (all through the Executor)
# ---------------------------------------------------------------------------------------------

def _as_dict(values, names: List[str], what: str) -> Dict:
    if isinstance(values, dict):
        if set(values) != set(names):
            raise ValueError(f"Symbol {what} and keys of the given location do not match: "
                             f"expected {names}, got {sorted(values)}")
        return dict(values)
    if len(values) != len(names):
        raise ValueError(f"{len(values)} values given for {len(names)} {what} {names}")
    return dict(zip(names, values))


def _to_nd(value, ctx, dtype) -> NDArray:
    if dtype == "asnumpy":
        return array(value, ctx=ctx, dtype=np.asarray(value).dtype)
    return array(value, ctx=ctx, dtype=dtype)


def _parse_location(sym, location, ctx, dtype=np.float32) -> Dict[str, NDArray]:
    """Argument arrays by name from a list (``list_arguments()`` order) or dict of numpy arrays."""
    given = _as_dict(location, sym.list_arguments(), "arguments")
    return {k: _to_nd(v, ctx, dtype) for k, v in given.items()}


def _parse_aux_states(sym, aux_states, ctx, dtype=np.float32) -> Optional[Dict[str, NDArray]]:
    if aux_states is None:
        return None
    return {k: _to_nd(v, ctx, dtype) for k, v in
            _as_dict(aux_states, sym.list_auxiliary_states(), "auxiliary states").items()}


def simple_forward(sym, ctx=None, is_train: bool = False, **inputs):
    """Outputs of ``sym`` on numpy inputs, as numpy (one array, or a list)."""
    ex = sym.bind(ctx or default_context(), args={k: array(v) for k, v in inputs.items()})
    outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
    return outs[0] if len(outs) == 1 else outs


def numeric_grad(executor, location: Dict[str, np.ndarray], aux_states=None, eps: float = 1e-4,
                 use_forward_train: bool = True, dtype=np.float32, projections=None,
                 max_elements: Optional[int] = None, num_directions: int = 3, rng=None):
    """Central differences of ``f = sum_i <outputs[i], projections[i]>`` (or of ``sum(outputs[0])``).

    Arguments with at most ``max_elements`` elements (all, if ``None``) get one difference per
    element. Larger ones are probed along ``num_directions`` random directions ``d`` (standard
    normal entries): the result is then ``{name: [(d, f'(x; d)), ...]}``, to compare with ``<grad, d>``.
    """
    projections = projections or [None] * len(executor.outputs)
    rng = rng or np.random

    def f() -> float:
        if aux_states is not None:
            for key, val in aux_states.items():
                executor.aux_dict[key][:] = val
        outs = executor.forward(is_train=use_forward_train)
        return sum(float(np.sum(o.asnumpy().astype(np.float64) * (1.0 if p is None else p)))
                   for o, p in zip(outs, projections))

    grads = {}
    for name, value in location.items():
        value = np.array(value, dtype=dtype)
        if value.dtype.kind != "f":
            continue
        target = executor.arg_dict[name]
        if max_elements is None or value.size <= max_elements:
            g = np.zeros(value.shape, dtype=np.float64)
            for i in range(value.size):
                old = value.flat[i]
                value.flat[i] = old + eps / 2
                target[:] = value
                f_plus = f()
                value.flat[i] = old - eps / 2
                target[:] = value
                g.flat[i] = (f_plus - f()) / eps
                value.flat[i] = old
            grads[name] = g
        else:
            probes = []
            for _ in range(num_directions):
                # NOTE: every element moves by about eps/2 (a unit-norm d would move each by
                # eps/2/sqrt(n), below float32's resolution), and d is what the arrays really
                # moved by after rounding to ``dtype``, so <grad, d> compares like with like
                d = rng.standard_normal(value.shape)
                plus = (value + d * (eps / 2)).astype(dtype)
                minus = (value - d * (eps / 2)).astype(dtype)
                d = (plus.astype(np.float64) - minus.astype(np.float64)) / eps
                target[:] = plus
                f_plus = f()
                target[:] = minus
                probes.append((d, (f_plus - f()) / eps))
            grads[name] = probes
        target[:] = value
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None, atol=None,
                           grad_nodes=None, use_forward_train: bool = True, ctx=None,
                           grad_stype_dict=None, dtype=np.float32, *, max_elements: int = 4096,
                           num_directions: int = 3) -> None:
    """Compare the Executor's gradient with central differences (MXNet's signature).

    ``grad_nodes`` (list, or dict name -> grad_req) limits the checked arguments (default all).
    Arguments with more than ``max_elements`` elements are checked along ``num_directions`` random
    directions instead of element by element. Defaults: ``numeric_eps`` by dtype (float32 2^-9,
    float64 2^-14), ``rtol`` 1e-2, ``atol`` by dtype (float32 1e-3, float64 1e-6).
    """
    ctx = ctx or default_context()
    dtype = np.dtype(dtype)
    loc = _parse_location(sym, location, ctx, dtype)
    loc_np = {k: v.asnumpy() for k, v in loc.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_np = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    if grad_nodes is None:
        grad_req = {k: "write" for k in sym.list_arguments()}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
    else:
        grad_req = {k: "write" for k in grad_nodes}
    rng = np.random.RandomState(np.random.randint(1 << 30))
    old_grads = {k: rng.normal(0, 0.01, loc[k].shape) for k in grad_req}
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in old_grads.items()}
    ex = sym.bind(ctx, args=loc, args_grad=args_grad, grad_req=grad_req, aux_states=aux)
    outs = ex.forward(is_train=True)
    # projections not too close to 0, so the differences keep their precision
    proj = [(rng.rand(*o.shape) + 0.1).astype(dtype) for o in outs]
    ex.backward([array(p, ctx=ctx, dtype=dtype) for p in proj])
    sym_grads = {k: (g.asnumpy() if g is not None else None) for k, g in ex.grad_dict.items()}
    eps = get_tolerance(np.zeros(1, dtype), numeric_eps, _EPS)
    rtol = 1e-2 if rtol is None else rtol
    atol = get_tolerance(np.zeros(1, dtype), atol, {np.dtype(np.float16): 1e-1,
                                                     np.dtype(np.float32): 1e-3,
                                                     np.dtype(np.float64): 1e-6})
    num = numeric_grad(ex, {k: loc_np[k] for k in grad_req}, aux_np, eps, use_forward_train, dtype,
                       proj, max_elements, num_directions, rng)
    for name, req in grad_req.items():
        got = sym_grads[name]
        if req == "add":
            got = got - old_grads[name]
        if req == "null":
            continue
        fd = num.get(name)
        if fd is None:
            continue
        if isinstance(fd, list):    # directional probes
            fd, got = np.array([v for _, v in fd]), np.array([np.sum(got * d) for d, _ in fd])
        assert_almost_equal(fd, got, rtol, atol, (f"NUMERICAL_{name}", f"BACKWARD_{name}"))


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None, ctx=None,
                           equal_nan: bool = False, dtype=np.float32) -> List[NDArray]:
    """Run ``sym`` forward (inference) and compare each output with ``expected`` (list or dict)."""
    ctx = ctx or default_context()
    loc = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    ex = sym.bind(ctx, args=loc, aux_states=aux, grad_req="null")
    outs = ex.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, outs):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"), equal_nan)
    return outs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None, aux_states=None,
                            grad_req="write", ctx=None, grad_stypes=None, equal_nan: bool = False,
                            dtype=np.float32) -> Dict[str, NDArray]:
    """Run forward (training) and backward with ``out_grads``; compare gradients with ``expected``.

    ``expected`` is a list (``list_arguments()`` order) or a dict by argument name. Gradient arrays
    start from random values, so ``grad_req='add'`` is checked as ``expected + initial``.
    """
    ctx = ctx or default_context()
    loc = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    init = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    args_grad = {k: _to_nd(v, ctx, np.asarray(expected[k]).dtype if dtype == "asnumpy" else dtype)
                 for k, v in init.items()}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in sym.list_arguments()}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req))
    ex = sym.bind(ctx, args=loc, args_grad=args_grad, grad_req=grad_req, aux_states=aux)
    ex.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    if out_grads is not None:
        out_grads = [_to_nd(g, ctx, dtype) for g in out_grads]
    ex.backward(out_grads)
    grads = ex.grad_dict
    for name, want in expected.items():
        req = grad_req.get(name, "null")
        got = grads.get(name)
        if req == "null" or got is None:
            continue
        want = np.asarray(want) + (init[name] if req == "add" else 0)
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"BACKWARD_{name}"), equal_nan)
    return grads


def check_speed(sym, location=None, ctx=None, N: int = 20, grad_req=None, typ: str = "whole",
                **kwargs) -> float:
    """Seconds per iteration of ``forward`` (``typ='forward'``) or ``forward`` + ``backward``
    (``'whole'``), after one warm-up; ``location`` gives values, else ``kwargs`` give shapes."""
    if typ not in ("whole", "forward"):
        raise ValueError(f"typ can only be 'whole' or 'forward', got {typ!r}")
    ctx = ctx or default_context()
    grad_req = grad_req or ("write" if typ == "whole" else "null")
    if location is None:
        ex = sym.simple_bind(ctx, grad_req=grad_req, **kwargs)
        location = {k: np.random.normal(size=a.shape, scale=1.0) for k, a in ex.arg_dict.items()}
    else:
        ex = sym.simple_bind(ctx, grad_req=grad_req, **{k: v.shape for k, v in location.items()})
    for k, v in location.items():
        ex.arg_dict[k][:] = v
    heads = [array(np.ones(o.shape), ctx, o.dtype) for o in ex.outputs]   # loss layers ignore theirs

    def run():
        ex.forward(is_train=typ == "whole")
        if typ == "whole":
            ex.backward(heads)
        waitall()
    run()
    tic = time.perf_counter()
    for _ in range(N):
        run()
    return (time.perf_counter() - tic) / N


def check_consistency(sym, ctx_list: Sequence[dict], scale: float = 1.0, grad_req="write",
                      arg_params=None, aux_params=None, rtol=None, atol=None, raise_on_err: bool = True,
                      ground_truth=None, equal_nan: bool = False, use_uniform: bool = False,
                      rand_type=np.float64):
    """Run ``sym`` under each ``ctx_list`` entry and compare outputs and gradients.

    Each entry is ``simple_bind``'s keyword arguments (``ctx``, input shapes, ``type_dict``), plus
    optionally ``'kernels': 'reference'`` to use the numpy reference kernels. The most precise
    executor is the ground truth; the others are compared with the looser dtype's tolerance.
    Returns the ground-truth dict (output and gradient arrays by name).
    """
    if len(ctx_list) < 2:
        raise ValueError("check_consistency needs at least two configurations")
    syms = list(sym) if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    out_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    exes = []
    for s, conf in zip(syms, ctx_list):
        conf = dict(conf)
        ref = conf.pop("kernels", None) == "reference"
        with reference_kernels() if ref else contextlib.nullcontext():
            exes.append(s.simple_bind(grad_req=grad_req, **conf))
    arg_params = dict(arg_params or {})
    aux_params = dict(aux_params or {})
    for name, arr in sorted(exes[0].arg_dict.items()):
        if name not in arg_params:
            arg_params[name] = (np.random.uniform(-0.92 * scale, 0.92 * scale, arr.shape) if use_uniform
                                else np.random.normal(size=arr.shape, scale=scale)).astype(rand_type)
    for name in exes[0].aux_dict:
        aux_params.setdefault(name, 0)
    for ex in exes:
        for name, arr in ex.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in ex.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for g in ex.grad_arrays:
                if g is not None:
                    g[:] = 0
    gt_idx = int(np.argmax([np.dtype(ex.outputs[0].dtype).itemsize for ex in exes]))

    def compare(pairs, label):
        for i, ex in enumerate(exes):
            if i == gt_idx:
                continue
            for name, arr in pairs(ex):
                want = gt.get(name)
                if want is None or arr is None:
                    continue
                try:
                    assert_almost_equal(arr, want, rtol=rtol, atol=atol, equal_nan=equal_nan,
                                        names=(f"config{i}_{name}", f"config{gt_idx}_{name}"))
                except AssertionError:
                    if raise_on_err:
                        raise
                    print(f"{label} error: config {i} vs {gt_idx} at {name}")

    for ex in exes:
        ex.forward(is_train=False)
    gt = ground_truth or {k: v.asnumpy() for k, v in exes[gt_idx].output_dict.items()}
    compare(lambda ex: zip(out_names, ex.outputs), "Predict")
    if grad_req != "null":
        for ex in exes:
            ex.forward(is_train=True)
        # every executor gets the same head gradients, at the least precise output dtype
        least = [min((ex.outputs[k].dtype for ex in exes), key=lambda t: np.dtype(t).itemsize)
                 for k in range(len(out_names))]
        heads = [o.asnumpy().astype(t) for o, t in zip(exes[0].outputs, least)]
        for ex in exes:
            ex.backward([array(h, ctx=ex._ctx, dtype=o.dtype) for h, o in zip(heads, ex.outputs)])
        if ground_truth is None:
            gt = {k: v.asnumpy() for k, v in exes[gt_idx].output_dict.items()}
            gt.update({k: None if v is None else v.asnumpy() for k, v in exes[gt_idx].grad_dict.items()})
        compare(lambda ex: zip(out_names + arg_names, ex.outputs + ex.grad_arrays), "Train")
    return gt


# ---------------------------------------------------------------------------------------------
# seeds
# ---------------------------------------------------------------------------------------------

def with_seed(seed: Optional[int] = None):
    """Decorator: seed numpy, ``random`` and ``mx.random`` before the test; print the seed if it fails.

    The seed is ``seed`` if given, else ``MXNET_TEST_SEED`` if set, else a fresh random one, so a
    failure seen once can be replayed with ``MXNET_TEST_SEED=<printed seed>``. Usable as
    ``@with_seed``, ``@with_seed()`` or ``@with_seed(42)``.
    """
    if callable(seed):
        return with_seed()(seed)

    def deco(test):
        @functools.wraps(test)
        def wrapper(*args, **kwargs):
            env = os.environ.get("MXNET_TEST_SEED")
            this = seed if seed is not None else int(env) if env else np.random.randint(0, 2 ** 31)
            np.random.seed(this)
            _pyrandom.seed(this)
            _resource.seed(this)
            try:
                return test(*args, **kwargs)
            except BaseException:
                print(f"[{test.__name__}] failed with seed {this}; to reproduce: MXNET_TEST_SEED={this}")
                raise
        wrapper.__signature__ = inspect.signature(test)
        return wrapper
    return deco


# ---------------------------------------------------------------------------------------------
# OpTestCase: a whole operator test from a declaration
# ---------------------------------------------------------------------------------------------

class OpTestCase:
    """Declarative operator test: subclass as ``class TestMyOp(OpTestCase)``, declare, done.

    Declare ``op`` (registry name), ``params`` and ``shapes`` (argument name -> shape; others
    are inferred), and ``forward_ref(self, params, **inputs)`` returning the numpy outputs.
    Optional: ``backward_ref(self, params, out_grads, **inputs)`` -> ``{name: gradient}``;
    ``make_inputs(self, rng, shapes, dtype)`` for constrained inputs (labels, positive values);
    ``grad_args`` (arguments checked by finite differences, default all; ``()`` for none, e.g.
    loss layers); tolerances ``rtol``/``atol`` (forward) and ``grad_rtol``/``grad_atol`` (numeric),
    each a ``{dtype: tol}`` dict or a number; ``dtypes`` (default float32 and float64); ``is_train``.

    Inherited tests, each run for every dtype: ``test_forward`` (executor vs ``forward_ref``),
    ``test_imperative`` (``mx.nd`` vs executor), ``test_numeric_gradient``, ``test_backward_ref``
    and ``test_consistency`` (float64 vs float32 vs numpy reference kernels).
    """

    op: str = ""
    params: dict = {}
    shapes: dict = {}
    dtypes = (np.float32, np.float64)
    grad_args: Optional[Sequence[str]] = None
    input_range = (-1.0, 1.0)
    is_train = False
    rtol = atol = grad_rtol = grad_atol = None
    seed = 0

    def op_params(self, dtype) -> dict:
        """The operator's parameters for one dtype (override when they depend on it)."""
        return dict(self.params)

    def forward_ref(self, params: dict, **inputs):
        raise NotImplementedError(f"{type(self).__name__} must define forward_ref")

    backward_ref = None

    def make_inputs(self, rng, shapes: Dict[str, tuple], dtype) -> Dict[str, np.ndarray]:
        lo, hi = self.input_range
        return {k: rng.uniform(lo, hi, s).astype(dtype) for k, s in shapes.items()}

    # -- the pieces every test uses ----------------------------------------------------------
    def _symbol(self, dtype):
        opdef = _registry.get(self.op)
        given = self.op_params(dtype)
        p = opdef.parse_params(given)
        names = opdef.list_arguments(p) + opdef.list_aux_states(p)
        node = Node(opdef, self.op.lower(), opdef.format_params(p, only=list(given)),
                    [NodeEntry(Node(None, n)) for n in names])
        return Symbol([NodeEntry(node, i) for i in range(opdef.num_visible_outputs(p))]), p

    def _case(self, dtype):
        np.random.seed(self.seed)   # the checks' own draws (projections, head gradients) repeat too
        sym, p = self._symbol(dtype)
        arg_shapes, _, aux_shapes = sym.infer_shape(**self.shapes)
        if arg_shapes is None:
            raise MXNetError(f"{type(self).__name__}: shapes {self.shapes} do not decide every "
                             f"input of {self.op}")
        shapes = dict(zip(sym.list_arguments(), map(tuple, arg_shapes)))
        shapes.update(zip(sym.list_auxiliary_states(), map(tuple, aux_shapes)))
        values = self.make_inputs(np.random.RandomState(self.seed), shapes, np.dtype(dtype))
        args = {k: values[k] for k in sym.list_arguments()}
        aux = {k: values[k] for k in sym.list_auxiliary_states()} or None
        return sym, p, args, aux

    def _tol(self, tol, dtype):
        return tol if tol is None or isinstance(tol, (int, float)) else tol.get(np.dtype(dtype))

    def _expected(self, p, args, aux):
        out = self.forward_ref(p, **args, **(aux or {}))
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def _forward(self, sym, args, aux, dtype):
        """Executor outputs as numpy (auxiliary states are copied: forward may update them)."""
        ex = sym.bind(default_context(), args={k: array(v, dtype=dtype) for k, v in args.items()},
                      grad_req="null", aux_states=None if aux is None else
                      {k: array(v, dtype=dtype) for k, v in aux.items()})
        outs = ex.forward(is_train=self.is_train)
        for i, o in enumerate(outs):
            assert o.dtype == np.dtype(dtype), f"{self.op}: output {i} has dtype {o.dtype}, want {dtype}"
        return [o.asnumpy() for o in outs]

    # -- inherited tests ---------------------------------------------------------------------
    def test_forward(self):
        for dtype in self.dtypes:
            sym, p, args, aux = self._case(dtype)
            expected = self._expected(p, args, {k: v.copy() for k, v in (aux or {}).items()})
            for i, (got, want) in enumerate(zip(self._forward(sym, args, aux, dtype), expected)):
                assert_almost_equal(got, np.asarray(want).astype(dtype), self._tol(self.rtol, dtype),
                                    self._tol(self.atol, dtype), (f"FORWARD_{i}", f"EXPECTED_{i}"))

    def test_imperative(self):
        for dtype in self.dtypes:
            sym, p, args, aux = self._case(dtype)
            ins = [array(args[k], dtype=dtype) for k in sym.list_arguments()]
            ins += [array(aux[k], dtype=dtype) for k in sym.list_auxiliary_states()]
            old = imperative.set_is_training(self.is_train)
            try:
                nd_outs = imperative.invoke_name(self.op, ins, self.op_params(dtype))
            finally:
                imperative.set_is_training(old)
            for i, got in enumerate(self._forward(sym, args, aux, dtype)):
                assert_almost_equal(nd_outs[i], got, names=(f"IMPERATIVE_{i}", f"SYMBOLIC_{i}"))

    def test_numeric_gradient(self):
        for dtype in self.dtypes:
            sym, p, args, aux = self._case(dtype)
            nodes = list(sym.list_arguments() if self.grad_args is None else self.grad_args)
            if nodes:
                check_numeric_gradient(sym, args, aux, rtol=self._tol(self.grad_rtol, dtype),
                                       atol=self._tol(self.grad_atol, dtype), grad_nodes=nodes,
                                       use_forward_train=self.is_train, dtype=dtype)

    def test_backward_ref(self):
        if self.backward_ref is None:
            return
        for dtype in self.dtypes:
            sym, p, args, aux = self._case(dtype)
            outs = self._expected(p, args, {k: v.copy() for k, v in (aux or {}).items()})
            heads = [np.random.RandomState(self.seed + 1).uniform(-1, 1, o.shape).astype(dtype) for o in outs]
            want = self.backward_ref(p, heads, **args, **(aux or {}))
            check_symbolic_backward(sym, args, heads, want, self._tol(self.grad_rtol, dtype),
                                    self._tol(self.grad_atol, dtype), aux, dtype=dtype)

    def test_consistency(self):
        _, _, args, aux = self._case(np.float64)
        shapes = {k: v.shape for k, v in args.items()}
        dts = (np.float64, np.float32, np.float32)
        confs = [dict(ctx=default_context(), type_dict={k: dt for k in args}, **shapes) for dt in dts]
        confs[2]["kernels"] = "reference"
        req = {k: ("write" if self.grad_args is None or k in self.grad_args else "null") for k in args}
        check_consistency([self._symbol(dt)[0] for dt in dts], confs,
                          grad_req=req if any(r != "null" for r in req.values()) else "null",
                          arg_params=args, aux_params=aux, rtol=self.grad_rtol, atol=self.grad_atol)


# ---------------------------------------------------------------------------------------------
# Checks for random generators (MXNet's mean_check, var_check, chi_square_check, verify_generator),
# with the chi-square tail written out instead of scipy.stats.chisquare
# ---------------------------------------------------------------------------------------------

def gen_buckets_probs_with_ppf(ppf, nbuckets: int):
    """``nbuckets`` equally likely buckets ``[(ppf(i/n), ppf((i+1)/n))]`` and their probabilities
    ``[1/n] * n``, from a quantile function ``ppf`` (the inverse cdf)."""
    assert nbuckets > 0
    probs = [1.0 / nbuckets for _ in range(nbuckets)]
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples: int = 1000000) -> bool:
    """Whether the mean of ``generator(nsamples)`` lies within ``mu ± 3 sigma / sqrt(nsamples)``."""
    sample_mean = np.array(generator(nsamples)).mean()
    half = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half < sample_mean < mu + half)


def var_check(generator, sigma, nsamples: int = 1000000) -> bool:
    """Whether the sample variance of ``generator(nsamples)`` lies within
    ``sigma^2 ± 3 sqrt(2 sigma^4 / (nsamples - 1))``."""
    sample_var = np.array(generator(nsamples)).var(ddof=1)
    half = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - half < sample_var < sigma ** 2 + half)


def _gamma_q(a: float, x: float) -> float:
    """The regularized upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a): a series below
    ``x = a + 1``, a continued fraction (modified Lentz) above, as in Numerical Recipes §6.2."""
    import math
    if x <= 0:
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-16:
            n += 1
            term *= x / n
            total += term
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return math.exp(log_front) * h


def chi_square_p_value(statistic: float, dof: int) -> float:
    """P(X >= statistic) for X ~ chi-square with ``dof`` degrees of freedom: Q(dof/2, statistic/2)."""
    return _gamma_q(dof / 2.0, statistic / 2.0)


def _bucket_counts(samples: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bucket ``i``, the samples with ``searchsorted(edges, x, 'right') // 2 == i``.

    That index is ``i`` for ``edges[2i-1] <= x < edges[2i+1]``, so the counts are differences of
    ``#(x >= e)`` over the odd edges: one vectorised comparison per edge instead of a binary
    search per sample (``verify_generator`` draws 10^8 samples in MXNet's tests). NaNs fall in no
    bucket, as ``searchsorted`` sorts them past the last edge.
    """
    valid = samples.size - (int(np.count_nonzero(np.isnan(samples))) if samples.dtype.kind == "f" else 0)
    at_least = [valid] + [int(np.count_nonzero(samples >= float(e))) for e in edges[1::2]]
    return -np.diff(np.array(at_least, dtype=np.int64))


def chi_square_check(generator, buckets, probs, nsamples: int = 1000000):
    """Pearson's chi-square test of ``generator(nsamples)`` against ``probs`` over ``buckets``.

    ``buckets`` are ``(low, high)`` ranges in ascending order for a continuous generator, or the
    values themselves for a discrete one. Returns ``(p, obs_freq, expected_freq)``; the statistic
    ``sum((obs - exp)^2 / exp)`` has ``len(buckets) - 1`` degrees of freedom (scipy's chisquare).
    """
    assert isinstance(buckets, list)
    samples = generator(nsamples)
    assert len(probs) == len(buckets)
    continuous = isinstance(buckets[0], (list, tuple))
    if continuous:
        edges = np.zeros((len(buckets) * 2,), dtype=np.float32)
        for i, (lo, hi) in enumerate(buckets):
            assert lo <= hi
            if i < len(buckets) - 1:
                assert hi <= buckets[i + 1][0]
            edges[2 * i], edges[2 * i + 1] = lo, hi
        obs_freq = _bucket_counts(np.asarray(samples), edges)
    else:
        samples = np.array(samples)
        obs_freq = np.array([(samples == b).sum() for b in buckets], dtype=np.int64)
    expected_freq = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    exp = expected_freq.astype(np.float64)
    statistic = float((((obs_freq - exp) ** 2) / exp).sum())
    return chi_square_p_value(statistic, len(buckets) - 1), obs_freq, expected_freq


def verify_generator(generator, buckets, probs, nsamples: int = 1000000, nrepeat: int = 5,
                     success_rate: float = 0.2, alpha: float = 0.05):
    """Run ``chi_square_check`` ``nrepeat`` times; fail unless at least ``nrepeat * success_rate``
    runs have a p value above ``alpha``. Returns the p values."""
    runs = [chi_square_check(generator=generator, buckets=buckets, probs=probs, nsamples=nsamples)
            for _ in range(nrepeat)]
    cs_ret_l = [r[0] for r in runs]
    success_num = (np.array(cs_ret_l) > alpha).sum()
    if success_num < nrepeat * success_rate:
        raise AssertionError(f"Generator test fails, Chi-square p={cs_ret_l}, "
                             f"obs_freq={[r[1] for r in runs]}, expected_freq={[r[2] for r in runs]}."
                             f"\nbuckets={buckets}, probs={probs}")
    return cs_ret_l


__all__ += ["gen_buckets_probs_with_ppf", "mean_check", "var_check", "chi_square_check",
            "chi_square_p_value", "verify_generator"]

# Optimizer comparisons (MXNet's compare_optimizer / compare_ndarray_tuple)
# ---------------------------------------------------------------------------------------------

# ``array`` too: MXNet's optimizer tests build master copies with it after ``import *``.
__all__ += ["compare_ndarray_tuple", "compare_optimizer", "array"]


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None) -> None:
    """Assert two optimizer states (NDArrays, or nested tuples of them; ``None`` skips) are close."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype: str = "default", g_stype: str = "default",
                      rtol=1e-4, atol=1e-5, compare_states: bool = True, ntensors: int = 1) -> None:
    """One update of ``opt1`` and ``opt2`` from the same random weight and gradient gives close
    weights (and states, with ``compare_states``).

    ``shape`` a tuple: one weight (``ntensors`` must be 1), stored as ``w_stype``, with a
    ``g_stype`` gradient for ``opt2`` and dense copies for ``opt1``. ``shape`` a list of shapes:
    ``opt2`` updates all ``ntensors`` weights in one call (its multi-tensor path), ``opt1`` one
    at a time, as the reference.
    """
    import copy

    from .ndarray import random as _nd_random
    ctx = default_context()
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError("compare_optimizer: one shape takes ntensors=1")
        arrays = []
        for stype, density in ((w_stype, 1), (g_stype, None)):
            if stype == "default":
                second = _nd_random.uniform(shape=shape, ctx=ctx, dtype=dtype)
                first = second.copyto(ctx)
            elif stype in ("row_sparse", "csr"):
                second = rand_ndarray(shape, stype, density=density, dtype=dtype)
                first = second.copyto(ctx).tostype("default")
            else:
                raise ValueError(f"compare_optimizer: storage type {stype!r} not supported")
            arrays.append((first, second))
        (w1, w2), (g1, g2) = arrays
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1, g1 = [], []
    for s in shape:       # drawn weight, gradient, weight, ... as MXNet draws them
        w1.append(_nd_random.uniform(shape=s, ctx=ctx, dtype=dtype))
        g1.append(_nd_random.uniform(shape=s, ctx=ctx, dtype=dtype))
    w1, g1 = tuple(w1), tuple(g1)
    w2, g2 = copy.deepcopy(w1), copy.deepcopy(g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)
