"""The plain reference paths (``ndarray/invoke_plain.py``, ``autograd_plain.py``) and the tuned ones
give identical results, bit for bit, on the op test cases; and the switch between them.

Each case runs once on each path in this process: forward outputs, and the gradients of every
floating-point input for a fixed random head gradient, must have the same dtype, shape and
bytes, and a case that fails must fail the same way on both. The cases: every recorded operator
case of ``tests/fixtures/tensor_ops_mxnet191.npz``, every ``OpTestCase`` of
``tests/ops/nn/test_nn_optestcase.py`` (inputs and auxiliary states as the op tests make them),
the composed functions of ``tests/test_autograd_ops.py``, and second derivatives. The whole
autograd and NDArray test files also run on the plain paths, in a subprocess.
"""
import importlib.util
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import mxref as mx
from mxref import autograd as ag
from mxref import autograd_plain, nd
from mxref._ext import switch
from mxref.ndarray import imperative, invoke_plain
from mxref.ndarray.ndarray import NDArray

HERE = os.path.dirname(os.path.abspath(__file__))
_DATA = np.load(os.path.join(HERE, "fixtures", "tensor_ops_mxnet191.npz"))
_SPECS = json.loads(str(_DATA["specs"]))


def _load(relpath: str):
    """A test module of the suite, imported privately (its tests are not collected again here)."""
    path = os.path.join(HERE, relpath)
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec = importlib.util.spec_from_file_location(f"_plain_paths_{os.path.basename(path)[:-3]}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.dirname(path))
    return module


def _bits(arrays):
    """What must be identical: dtype, shape and bytes of each array (``None`` stays ``None``)."""
    return [None if a is None else (a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes()) for a in arrays]


def _on_both_paths(run):
    """``run()`` on the tuned then the plain paths (same seeds); both results, or both errors.

    Where the compiled tuned ``invoke`` (``mxref._ext.dispatch_core``) is loaded, the tuned run is
    made twice, compiled and with its pure-Python twin, and those two must agree first."""
    results = []
    modes = [(False, True), (False, False), (True, False)] if imperative._compiled is not None \
        else [(False, False), (True, False)]
    for plain, compiled in modes:
        old = imperative.use_compiled(compiled)
        try:
            with imperative.plain_paths(plain):
                mx.random.seed(0)
                try:
                    results.append(run())
                except mx.MXNetError as exc:
                    results.append(f"MXNetError: {exc}")
                mx.nd.waitall()
        finally:
            imperative.use_compiled(old)
    if len(results) == 3:
        assert results[0] == results[1], "the compiled and the pure-Python tuned invoke differ"
        results = results[1:]
    return results


def _op_run(op, arrays, params, is_train=False, n_args=None):
    """Forward ``op`` on ``arrays``, then backward from its visible floating-point outputs into
    its floating-point arguments (the first ``n_args`` inputs; the rest are auxiliary states)."""
    def run():
        ins = [nd.array(a, dtype=a.dtype) for a in arrays]
        n = len(ins) if n_args is None else n_args
        xs = [x for x in ins[:n] if np.dtype(x.dtype).kind == "f"]
        for x in xs:
            x.attach_grad()
        old = imperative.set_is_training(is_train)
        try:
            with ag.record(train_mode=is_train):
                outs = imperative.invoke_name(op, ins, dict(params))
        finally:
            imperative.set_is_training(old)
        forward = [o.asnumpy() for o in outs]
        visible = mx.ops.registry.get(op).num_visible_outputs(mx.ops.registry.get(op).parse_params(params))
        heads = [o for o in outs[:visible] if np.dtype(o.dtype).kind == "f"]
        if not xs or not heads or any(o._ag is None for o in heads):
            return _bits(forward), None
        rng = np.random.default_rng(1)
        head_grads = [nd.array(rng.standard_normal(h.shape), dtype=h.dtype) for h in heads]
        try:
            ag.backward(heads, head_grads)
        except mx.MXNetError as exc:
            return _bits(forward), f"MXNetError: {exc}"
        return _bits(forward), _bits([x.grad.asnumpy() for x in xs])
    return run


def _fixture_case(i):
    spec = _SPECS[i]
    arrays = [_DATA[f"in_{n}"] for n in spec["inputs"]]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["params"].items()}
    return spec["op"], arrays, params


@pytest.mark.filterwarnings("ignore::RuntimeWarning")    # sqrt(-1) and the like, on both paths
@pytest.mark.parametrize("i", range(len(_SPECS)), ids=lambda i: f"{i}-{_SPECS[i]['op']}")
def test_fixture_op_cases_match(i):
    """Every recorded operator case: forward outputs and input gradients identical on both paths."""
    op, arrays, params = _fixture_case(i)
    with np.errstate(all="ignore"):
        tuned, plain = _on_both_paths(_op_run(op, arrays, params))
    assert tuned == plain


def _optestcases():
    module = _load(os.path.join("ops", "nn", "test_nn_optestcase.py"))
    return [c for _, c in sorted(vars(module).items())
            if isinstance(c, type) and issubclass(c, mx.test_utils.OpTestCase) and _.startswith("Test")]


@pytest.mark.parametrize("case", _optestcases(), ids=lambda c: c.__name__)
def test_nn_op_test_cases_match(case):
    """Every declarative neural-network op test case, in each of its dtypes, training mode as the
    case declares: outputs (hidden ones included) and gradients identical on both paths."""
    self = case()
    for dtype in self.dtypes:
        sym, _, args, aux = self._case(dtype)
        arrays = [args[k] for k in sym.list_arguments()] + [aux[k] for k in sym.list_auxiliary_states()]
        run = _op_run(self.op, arrays, self.op_params(dtype), self.is_train, len(sym.list_arguments()))
        tuned, plain = _on_both_paths(run)
        assert tuned == plain, f"{case.__name__} in {np.dtype(dtype).name}"


_AUTOGRAD_CASES = _load("test_autograd_ops.py").CASES


@pytest.mark.parametrize("fn,arrays", [c[1:] for c in _AUTOGRAD_CASES], ids=[c[0] for c in _AUTOGRAD_CASES])
def test_composed_functions_match(fn, arrays):
    """The composed functions autograd's own tests check (views, slices, broadcasting, several
    consumers of one value): values and gradients identical on both paths, 'write' then 'add'."""
    def run():
        xs = [nd.array(a, dtype="float64") for a in arrays]
        for x in xs:
            x.attach_grad("add")
        w = nd.array(np.random.default_rng(3).standard_normal(fn(*xs).shape), dtype="float64")
        results = []
        for _ in range(2):      # the second backward adds to the first
            with ag.record():
                out = fn(*xs)
            out.backward(w)
            results.append(_bits([out.asnumpy()] + [x.grad.asnumpy() for x in xs]))
        return results
    tuned, plain = _on_both_paths(run)
    assert tuned == plain


SECOND_ORDER = [nd.sin, nd.exp, nd.tanh, nd.sigmoid, nd.sqrt, nd.arctan, lambda x: x ** 3,
                lambda x: 2 / x, lambda x: nd.sin(x) * nd.exp(x), lambda x: nd.log(x) * x + x * x]


@pytest.mark.parametrize("fn", SECOND_ORDER, ids=range(len(SECOND_ORDER)))
def test_second_derivatives_match(fn):
    """``grad(create_graph=True)`` then ``backward``: first and second derivatives identical."""
    def run():
        x = nd.array([0.3, 0.7, 1.4], dtype="float64")
        x.attach_grad()
        with ag.record():
            y = fn(x)
            dy = ag.grad(y, [x], create_graph=True)[0]
        dy.backward()
        return _bits([dy.asnumpy(), x.grad.asnumpy()])
    tuned, plain = _on_both_paths(run)
    assert tuned == plain


def test_grad_returns_copies_on_both_paths():
    """A gradient that is the head gradient itself, or one variable passed twice, comes back as
    separate arrays on both paths; ``.grad`` is left alone."""
    def run():
        x = nd.array([1.0, 2.0])
        x.attach_grad()
        with ag.record():
            y = x + 0
        g = nd.array([3.0, 4.0])
        a, b = ag.grad(y, [x, x], head_grads=g)
        assert a is not g and b is not g and a is not b
        return _bits([a.asnumpy(), b.asnumpy(), x.grad.asnumpy()])
    tuned, plain = _on_both_paths(run)
    assert tuned == plain


def test_the_forward_comparison_can_fail(monkeypatch):
    """A plain invoke that computes something else is caught (the comparison is not vacuous)."""
    real = invoke_plain.invoke

    def off_by_one(op, pkey, params, inputs, out=None, ctx=None):
        outs = real(op, pkey, params, inputs, out, ctx)
        return [o + 1 if op.name == "sin" else o for o in outs]

    monkeypatch.setattr(invoke_plain, "invoke", off_by_one)
    op, arrays, params = next(_fixture_case(i) for i, s in enumerate(_SPECS) if s["op"] == "sin")
    tuned, plain = _on_both_paths(_op_run(op, arrays, params))
    assert tuned[0] != plain[0]


def test_the_gradient_comparison_can_fail(monkeypatch):
    """A plain backward whose gradient differs in the last bit is caught too."""
    real = autograd_plain._node_backward

    def nudged(node, out_grads, link):
        grads = real(node, out_grads, link)
        return [g * (1 + 2 ** -20) if node.op.name == "sin" else g for g in grads]

    monkeypatch.setattr(autograd_plain, "_node_backward", nudged)
    op, arrays, params = next(_fixture_case(i) for i, s in enumerate(_SPECS) if s["op"] == "sin")
    tuned, plain = _on_both_paths(_op_run(op, arrays, params))
    assert tuned[0] == plain[0] and tuned[1] != plain[1]


# ---------------------------------------------------------------------------------------------
# The switch
# ---------------------------------------------------------------------------------------------

def test_use_plain_rebinds_the_entry_points_and_restores_them():
    """``use_plain`` swaps every entry point at once and returns the previous choice;
    ``plain_paths`` restores it on exit, also after an error."""
    old = imperative.use_plain(True)
    try:
        assert imperative.is_plain()
        for name in imperative._ENTRY_POINTS:
            assert getattr(imperative, name) is getattr(invoke_plain, name)
        assert imperative.use_plain(False) is True
        assert imperative.invoke is imperative._TUNED["invoke"]
        with pytest.raises(KeyError):
            with imperative.plain_paths():
                assert imperative.is_plain()
                raise KeyError("inside")
        assert not imperative.is_plain()
    finally:
        imperative.use_plain(old)


def test_use_compiled_switches_the_tuned_invoke():
    """``use_compiled`` picks the compiled tuned ``invoke`` (when loaded) or its Python twin."""
    old = imperative.use_compiled(False)
    try:
        assert imperative.invoke is imperative._TUNED_PYTHON_INVOKE or imperative.is_plain()
        assert "compiled" not in imperative.selected_paths()
        imperative.use_compiled(True)
        if imperative._compiled is not None and not imperative.is_plain():
            assert imperative.invoke is imperative._compiled.invoke
            assert imperative.selected_paths().startswith("tuned, compiled")
    finally:
        imperative.use_compiled(old)


@pytest.mark.parametrize("env,want", [({}, False), ({"MXREF_PLAIN_PATHS": "1"}, True),
                                      ({"MXREF_ENABLE_EXT": "0"}, True),
                                      ({"MXREF_ENABLE_EXT": "0", "MXREF_PLAIN_PATHS": "0"}, False)])
def test_environment_selects_the_paths(monkeypatch, env, want):
    """``MXREF_PLAIN_PATHS`` decides when set; unset, pure mode picks the plain paths. Pure mode is
    the one switch's state, which ``MXREF_ENABLE_EXT=0`` sets once, at import: set it here as that
    would (``test_info.py`` checks a fresh ``MXREF_ENABLE_EXT=0`` process end to end)."""
    monkeypatch.delenv("MXREF_PLAIN_PATHS", raising=False)
    monkeypatch.delenv("MXREF_ENABLE_EXT", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    old = switch.set_reference_only(env.get("MXREF_ENABLE_EXT") == "0", switch.ENV_REASON)
    try:
        assert imperative.plain_by_default()[0] is want
    finally:
        switch.set_reference_only(*old)


def test_a_bad_value_is_an_error(monkeypatch):
    monkeypatch.setenv("MXREF_PLAIN_PATHS", "yes")
    with pytest.raises(mx.MXNetError, match="MXREF_PLAIN_PATHS must be 0 or 1"):
        imperative.plain_by_default()


def test_info_shows_the_selected_paths():
    """``mxref.info()`` names the paths in use and why."""
    with imperative.plain_paths(True):
        assert mx.info(file=io.StringIO())["dispatch"].startswith("plain")
    with imperative.plain_paths(False):
        assert mx.info(file=io.StringIO())["dispatch"].startswith("tuned")


def test_no_module_binds_an_entry_point_by_name():
    """Callers reach ``imperative.invoke`` & co. through the module: a name bound by
    ``from .imperative import invoke`` would keep the path chosen at import and miss the switch."""
    import re
    names = "|".join(imperative._ENTRY_POINTS)
    pattern = re.compile(rf"from\s+[.\w]*imperative\s+import\s+\(?[^)\n]*\b({names})\b")
    root = os.path.join(os.path.dirname(HERE), "mxref")
    bad = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
           if f.endswith(".py") and f != "imperative.py"       # (whose docstring names the trap)
           and pattern.search(open(os.path.join(d, f)).read())]
    assert not bad, bad
    assert pattern.search("from .imperative import invoke, parse_params")     # the scan works


def test_ndarray_methods_are_defined_on_the_class():
    """autograd's NDArray methods and the recording views are NDArray's own, not set on it by
    importing autograd."""
    for name in ("attach_grad", "backward", "detach", "reshape", "_at", "_slice", "copyto"):
        fn = vars(NDArray)[name]
        assert fn.__module__ == "mxref.ndarray.ndarray" and fn.__qualname__ == f"NDArray.{name}"
    assert isinstance(vars(NDArray)["grad"], property)


def test_autograd_and_ndarray_tests_pass_on_the_plain_paths():
    """The autograd and NDArray test files, run with ``MXREF_PLAIN_PATHS=1`` (subprocess)."""
    root = os.path.dirname(HERE)
    files = sorted(f for f in os.listdir(HERE) if f.startswith("test_autograd") and f.endswith(".py"))
    env = dict(os.environ, MXREF_PLAIN_PATHS="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           *[os.path.join("tests", f) for f in files], "tests/ndarray",
                           "tests/test_cached_op.py", "tests/test_operator.py"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
