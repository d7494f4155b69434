"""The operator test harness: run an op's kernels, compare every registered kernel with the
reference, and check gradient graphs against central differences.

Everything here calls operators directly (no engine, no NDArray), so a test failing here points
at the operator itself:

* ``run_op``             — one forward call of the kernel ``get_kernel`` picks (or a chosen one)
* ``forward`` / ``grads`` — outputs, and input gradients from the op's gradient graph
* ``check_op_gradient``  — symbolic gradient == numeric gradient (float64 central differences)
* ``check_kernels``      — the reference and every fast kernel registered for a device on the
                           same case: bit for bit where the kernel promises it (``exact``), else
                           within the tolerance it states (or a tighter one the test gives)
* ``fast_and_reference`` — run a whole function with the table as it is, then with reference
                           kernels only, and check the fast kernels really ran

``mxref.test_utils`` re-exports these; ``tests/ops/test_kernels.py`` walks the table and
fails for a fast kernel without a comparison case.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._ext.switch import reference_kernels
from .context import cpu
from .graph import Node, NodeEntry, make_node
from .ops import registry
from .ops.registry import Kernel, OpContext
from .symbol.eval_numpy import evaluate

__all__ = ["run_op", "forward", "grads", "numeric_grads", "check_op_gradient", "check_kernels",
           "fast_and_reference", "kernel_calls"]


class _Resource:
    """A private 'random' / 'temp_space' resource, so kernel tests need no engine."""

    def __init__(self, kind: str, seed: int):
        self.kind = kind
        self.generator = np.random.default_rng(seed)

    def get_space(self, nbytes):
        return np.empty(nbytes, dtype=np.uint8)


def _octx(op, seed: int, is_train: bool) -> OpContext:
    return OpContext(is_train=is_train, ctx=cpu(), resources=[_Resource(k, seed) for k in op.resources])


def _parse(op, params):
    return op.parse_params(params or {})


# ---------------------------------------------------------------------------------------------
# Running one op
# ---------------------------------------------------------------------------------------------

def run_op(name: str, arrays: Sequence[np.ndarray], params: dict = None, *, seed: int = 0,
           req: str = "write", out=None, is_train: bool = False,
           kernel: Union[None, str, Kernel] = None) -> List[np.ndarray]:
    """Parse ``params``, infer output shapes and dtypes, allocate outputs, call a kernel once.

    ``kernel``: ``None`` is the one ``get_kernel(op, 'cpu')`` gives now, ``'reference'`` the op's
    numpy reference, a ``Kernel`` that fast kernel (it must take the call).
    """
    op = registry.get(name)
    p = _parse(op, params)
    arrays = [np.asarray(a) for a in arrays]
    _, shapes = op.infer_shape(p, [a.shape for a in arrays])
    _, types = op.infer_type(p, [a.dtype for a in arrays])
    outs = out if out is not None else [np.zeros(s, dtype=t) for s, t in zip(shapes, types)]
    reqs = [req] * len(outs)
    if kernel is None:
        fn = registry.get_kernel(op, "cpu")
    elif isinstance(kernel, str) and kernel == "reference":
        fn = registry.reference_kernel(op)
    else:
        assert kernel.takes(p, arrays, outs, reqs), f"{kernel.name} does not take this call"
        fn = kernel.fn
    fn(_octx(op, seed, is_train), p, arrays, outs, reqs)
    return outs


def _build(name: str, inputs: Sequence[np.ndarray], params):
    """A node applying ``name`` to fresh variables (named as the op's inputs) fed with ``inputs``."""
    op = registry.get(name)
    p = _parse(op, params)
    names = op.list_inputs(p)
    assert len(names) == len(inputs), f"{name} takes {names}"
    variables = [Node(None, n) for n in names]
    node = make_node(name, [NodeEntry(v) for v in variables], name.lower() + "0", params=p)
    return node, {v: np.asarray(x) for v, x in zip(variables, inputs)}


def forward(name: str, inputs: Sequence[np.ndarray], params: dict = None, is_train: bool = False,
            seed: int = 0) -> List[np.ndarray]:
    """Every output of one forward run through the graph interpreter (aux inputs updated in place)."""
    node, feed = _build(name, inputs, params)
    return evaluate([NodeEntry(node, i) for i in range(node.num_outputs())], feed, is_train=is_train,
                    seed=seed)


def grads(name: str, inputs: Sequence[np.ndarray], params: dict = None, ograds=None,
          is_train: bool = True, seed: int = 0) -> List[Optional[np.ndarray]]:
    """Input gradients from the op's gradient graph given head gradients (``None`` where the
    gradient function returns ``None``; missing head gradients stay unfed variables)."""
    node, feed = _build(name, [np.array(x, copy=True) for x in inputs], params)
    heads = []
    for i in range(node.num_outputs()):
        v = Node(None, f"head_grad{i}")
        heads.append(NodeEntry(v))
        if ograds is not None and i < len(ograds):
            feed[v] = ograds[i]
    entries = node.op.gradient(node, heads)
    assert len(entries) == len(inputs), "gradient must return one entry per input"
    live = [e for e in entries if e is not None]
    vals = iter(evaluate(live, feed, is_train=is_train, seed=seed))
    return [None if e is None else next(vals) for e in entries]


def numeric_grads(name: str, inputs: Sequence[np.ndarray], ograds: Sequence[np.ndarray],
                  wrt: Sequence[int], params: dict = None, is_train: bool = True, seed: int = 0,
                  eps: float = 1e-6) -> List[np.ndarray]:
    """Central differences of ``sum_i <out_i, ograd_i>`` with respect to ``inputs[k]``, k in ``wrt``
    (float64 copies; each evaluation sees fresh inputs, so aux states do not drift)."""
    def loss(xs):
        outs = forward(name, [np.array(x, copy=True) for x in xs], params, is_train, seed)
        return sum(float((o * g).sum()) for o, g in zip(outs, ograds))

    result = []
    for k in wrt:
        xs = [np.array(x, dtype=np.float64, copy=True) for x in inputs]
        g = np.zeros_like(xs[k])
        flat, gflat = xs[k].reshape(-1), g.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            up = loss(xs)
            flat[j] = old - eps
            down = loss(xs)
            flat[j] = old
            gflat[j] = (up - down) / (2 * eps)
        result.append(g)
    return result


def check_op_gradient(name: str, inputs: Sequence[np.ndarray], params: dict = None, *,
                      wrt: Sequence[int] = None, rtol: float = 1e-5, atol: float = 1e-7,
                      eps: float = 1e-6, is_train: bool = True, seed: int = 0,
                      ograd_seed: int = 1234) -> None:
    """The symbolic gradient of ``sum_i <out_i, w_i>`` (``w_i`` standard normal from ``ograd_seed``;
    zero for hidden outputs) equals central differences, in float64, for the inputs in ``wrt``
    (default: every argument). ``seed`` feeds the op's random resource, the same for every run."""
    inputs = [np.asarray(x, dtype=np.float64) for x in inputs]
    op = registry.get(name)
    p = _parse(op, params)
    outs = forward(name, [x.copy() for x in inputs], params, is_train, seed)
    rng = np.random.default_rng(ograd_seed)
    ograds = [rng.standard_normal(o.shape) for o in outs]
    for i in range(op.num_visible_outputs(p), len(ograds)):
        ograds[i] = np.zeros_like(ograds[i])
    wrt = list(range(len(op.list_arguments(p))) if wrt is None else wrt)
    sym = grads(name, inputs, params, ograds, is_train, seed)
    num = numeric_grads(name, inputs, ograds, wrt, params, is_train, seed, eps)
    for k, n in zip(wrt, num):
        assert sym[k] is not None, f"{name}: no gradient for input {k}"
        np.testing.assert_allclose(sym[k], n, rtol=rtol, atol=atol,
                                   err_msg=f"{name}: gradient of input {k} (seed {seed})")


# ---------------------------------------------------------------------------------------------
# Every registered kernel against the reference
# ---------------------------------------------------------------------------------------------

def _compare(kernel: Kernel, got, want, label: str, rtol, atol) -> None:
    msg = f"{kernel.name} vs the reference of {kernel.op}: {label}"
    if kernel.exact and rtol is None and atol is None:
        np.testing.assert_array_equal(got, want, err_msg=msg)
        return
    krtol, katol = kernel.tolerance(want.dtype)
    np.testing.assert_allclose(got, want, rtol=krtol if rtol is None else min(rtol, krtol),
                               atol=katol if atol is None else min(atol, katol), err_msg=msg)


def check_kernels(name: str, inputs: Sequence[np.ndarray], params: dict = None, *, req="write",
                  outputs: Sequence[np.ndarray] = None, device: str = "cpu", is_train: bool = False,
                  seed: int = 0, rtol: float = None, atol: float = None,
                  expect_fast: bool = True) -> Dict[str, List[np.ndarray]]:
    """Run op ``name``'s reference kernel and every fast kernel registered for ``device`` on fresh
    copies of the same case; compare the outputs and the inputs the kernels may mutate.

    ``req`` is one request for every output or a list; ``outputs`` are the arrays the outputs start
    as (for ``'add'`` and ``'null'``; zeros otherwise). An ``exact`` kernel must give the
    reference's bits; another its stated tolerance, or ``rtol``/``atol`` where they are tighter.
    ``expect_fast`` (default) fails when no kernel is registered or one declines the case; with
    ``expect_fast=False`` kernels must decline (the cases left to the reference). Returns the
    results by kernel name (``'reference'`` first): the outputs, then the inputs after the call.
    """
    op = registry.get(name)
    p = _parse(op, params)
    inputs = [np.asarray(a) for a in inputs]
    _, shapes = op.infer_shape(p, [a.shape for a in inputs])
    _, types = op.infer_type(p, [a.dtype for a in inputs])
    start = list(outputs) if outputs is not None else [np.zeros(s, t) for s, t in zip(shapes, types)]
    reqs = [req] * len(start) if isinstance(req, str) else list(req)
    kernels = registry.list_kernels(name, device)
    if expect_fast:
        assert kernels, f"no fast kernel is registered for ({name}, {device})"
    if device == "gpu":           # arrays go to the device and back: the GPU backend's harness
        from .ops.gpu.harness import check_gpu_kernel  # noqa: PLC0415
        got = check_gpu_kernel(name, inputs, params, req=req, outputs=outputs, is_train=is_train,
                               rtol=rtol, atol=atol)
        return {"gpu": got}
    if device not in ("cpu",):
        raise NotImplementedError(f"check_kernels: no harness for device type {device!r}")

    def run(fn):
        ins, outs = [a.copy() for a in inputs], [o.copy() for o in start]
        fn(_octx(op, seed, is_train), p, ins, outs, reqs)
        return outs + ins

    results = {"reference": run(registry.reference_kernel(op))}
    for k in kernels:
        takes = k.takes(p, inputs, start, reqs)
        if not expect_fast:
            assert not takes, f"{k.name} takes a case meant for the reference"
            continue
        assert takes, f"{k.name} declines this case of {name}"
        got = run(k.fn)
        labels = [f"output {i}" for i in range(len(start))] + [f"input {i}" for i in range(len(inputs))]
        for label, a, b in zip(labels, got, results["reference"]):
            _compare(k, a, b, label, rtol, atol)
        results[k.name] = got
    return results


@contextlib.contextmanager
def kernel_calls(op_names: Sequence[str] = None, device: str = "cpu") -> Iterator[Dict[str, int]]:
    """Count, by kernel name, the calls of the fast kernels of ``op_names`` (default: all) inside
    the block (each kernel's ``fn`` is wrapped for the block)."""
    kernels = [k for k in registry.list_kernels(device_type=device)
               if op_names is None or k.op in op_names]
    calls = {k.name: 0 for k in kernels}
    saved = [(k, k.fn) for k in kernels]

    def counting(k, fn):
        def wrapper(*args):
            calls[k.name] += 1
            return fn(*args)
        return wrapper
    for k, fn in saved:
        k.fn = counting(k, fn)
    try:
        yield calls
    finally:
        for k, fn in saved:
            k.fn = fn


def fast_and_reference(fn: Callable[[], object], ops: Sequence[str] = ()) -> Tuple[object, object]:
    """``fn()`` with the kernel table as it is, then with reference kernels only. Every op in
    ``ops`` must have a fast kernel, and each must have run at least once in the first call, so a
    kernel that quietly declines does not pass as "equal to the reference". ``fn`` must look its
    kernels up when it runs (``run_op``, ``get_kernel``, an executor it binds)."""
    with kernel_calls(ops) as calls:
        fast = fn()
    for name in ops:
        ran = {k.name: calls[k.name] for k in registry.list_kernels(name, "cpu")}
        assert ran, f"no fast kernel is registered for ({name}, cpu)"
        assert any(ran.values()), f"the fast kernels of {name} did not run: {ran}"
    with reference_kernels("fast_and_reference"):
        ref = fn()
    return fast, ref
