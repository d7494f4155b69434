"""Ring and tree allreduce and tree broadcast over the thread link: every op, dtype, odd sizes, W = 1..5."""
import numpy as np
import pytest

from mxref.collective import algorithms
from mxref.collective.base import BITOR, MAX, MIN, PROD, SUM, reducer
from mxref.collective.local_engine import LocalLink, LocalWorld

DTYPES = ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "uint32", "bool"]
SIZES = [0, 1, 2, 3, 7, 203]
NUMPY = {SUM: np.add, MAX: np.maximum, MIN: np.minimum, PROD: np.multiply, BITOR: np.bitwise_or}


def _input(rank, n, dtype, seed):
    # Small integers in every dtype, so sums and products are exact in any order of reduction.
    rng = np.random.default_rng(seed * 1000 + rank)
    lo = -3 if np.dtype(dtype).kind in "if" else 0
    hi = 2 if dtype == "bool" else 4
    return rng.integers(lo, hi, n).astype(dtype)


def _expected(world, n, dtype, op, seed):
    out = _input(0, n, dtype, seed)
    for r in range(1, world):
        other = _input(r, n, dtype, seed)
        if dtype == "bool" and op in (SUM, PROD):
            out = np.logical_or(out, other) if op == SUM else np.logical_and(out, other)
        else:
            out = NUMPY[op](out, other)
    return out


def _ops_for(dtype):
    return [SUM, MAX, MIN, PROD] + ([BITOR] if np.dtype(dtype).kind in "iub" else [])


def _run_threads(world, fn):
    import threading
    lw = LocalWorld(world, timeout=20)
    errors, outs = [], [None] * world

    def body(rank):
        try:
            outs[rank] = fn(LocalLink(lw, rank))
        except BaseException as exc:  # noqa: B036 - surfaced by the assert below
            errors.append(exc)
            lw.fail(rank)
    threads = [threading.Thread(target=body, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    return outs


@pytest.mark.parametrize("algo", ["ring", "tree"])
@pytest.mark.parametrize("world", [1, 2, 3, 4, 5])
def test_allreduce_every_op_dtype_and_size(world, algo):
    """Each rank's result equals numpy's reduction of all inputs, and all ranks are byte-identical."""
    cases = [(n, d, op) for d in DTYPES for op in _ops_for(d) for n in SIZES]

    def work(link):
        results = []
        for i, (n, dtype, op) in enumerate(cases):
            buf = _input(link.rank, n, dtype, i)
            fold = reducer(op, buf.dtype)
            if algo == "ring":
                algorithms.ring_allreduce(link, buf, fold)
            else:
                algorithms.tree_allreduce(link, buf, fold, chunk_bytes=64)   # several pipelined chunks
            results.append(buf)
        return results

    outs = _run_threads(world, work)
    for i, (n, dtype, op) in enumerate(cases):
        want = _expected(world, n, dtype, op, i)
        for rank in range(world):
            got = outs[rank][i]
            assert got.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(got, want, err_msg=f"rank {rank} n={n} {dtype} op={op}")
            assert got.tobytes() == outs[0][i].tobytes()


@pytest.mark.parametrize("world", [2, 3, 5])
def test_float_sums_are_identical_on_every_rank(world):
    """With inexact float sums the ranks still agree bit for bit (one rank's order is everyone's)."""
    def work(link):
        rng = np.random.default_rng(link.rank)
        a, b = rng.standard_normal(1003), rng.standard_normal(77)
        algorithms.ring_allreduce(link, a, reducer(SUM, a.dtype))
        algorithms.tree_allreduce(link, b, reducer(SUM, b.dtype), chunk_bytes=64)
        return a, b
    outs = _run_threads(world, work)
    want = sum(np.random.default_rng(r).standard_normal(1003) for r in range(world))
    for a, b in outs:
        assert a.tobytes() == outs[0][0].tobytes() and b.tobytes() == outs[0][1].tobytes()
        np.testing.assert_allclose(a, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5])
def test_tree_broadcast_from_every_root(world):
    """Every rank ends with the root's bytes, for every root and odd chunkings."""
    def work(link):
        got = []
        for root in range(world):
            buf = np.full(13, -1.0) if link.rank != root else np.arange(13.0) + root
            algorithms.tree_broadcast(link, buf, root, chunk_bytes=24)
            got.append(buf)
            got.append(algorithms.broadcast_object(link, {"root": root} if link.rank == root else None, root))
        return got
    for out in _run_threads(world, work):
        for root in range(world):
            np.testing.assert_array_equal(out[2 * root], np.arange(13.0) + root)
            assert out[2 * root + 1] == {"root": root}


def test_segment_bounds_cover_the_buffer_even_when_smaller_than_the_world():
    """W segments tile [0, n) with sizes differing by at most one; empty ones when n < W."""
    for n, w in [(0, 3), (2, 5), (10, 3), (1001, 4)]:
        b = algorithms.segment_bounds(n, w)
        sizes = np.diff(b)
        assert b[0] == 0 and b[-1] == n and len(sizes) == w and sizes.max() - sizes.min() <= 1


def test_check_agreement_names_the_odd_ranks():
    """A rank passing a different count makes every rank raise an error naming it."""
    from mxref.base import MXNetError

    def work(link):
        with pytest.raises(MXNetError, match=r"ranks \[2\] disagree.*rank 2: count=5"):
            algorithms.check_agreement(link, "allreduce", ("count",), (5 if link.rank == 2 else 4,))
        return True
    assert all(_run_threads(4, work))


class _Opaque:
    """A class instance: not in the data-only encoding."""

    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return isinstance(other, _Opaque) and other.x == self.x


@pytest.mark.parametrize("root_opts_in, others_opt_in", [(False, False), (True, False), (True, True)])
def test_broadcast_of_an_object_outside_the_data_only_encoding(root_opts_in, others_opt_in):
    """Without the opt-in the root refuses to pickle and *every* rank raises (nobody hangs);
    a rank that did not opt in refuses a pickle; with the opt-in everywhere it arrives."""
    def work(link):
        allow = root_opts_in if link.rank == 0 else others_opt_in
        obj = _Opaque(7) if link.rank == 0 else None
        try:
            return algorithms.broadcast_object(link, obj, 0, allow_pickle=allow)
        except Exception as exc:  # noqa: BLE001 - the outcome is what is checked
            return f"{type(exc).__name__}: {exc}"
    out = _run_threads(3, work)
    if not root_opts_in:
        assert all("cannot carry a" in o and "allow_pickle=True" in o for o in out), out
    elif not others_opt_in:
        assert out[0] == _Opaque(7)
        assert all("a peer sent a pickled object; this rank did not opt in" in o for o in out[1:]), out
    else:
        assert out == [_Opaque(7)] * 3


def test_broadcast_value_header_is_data_only():
    """An array's shape/dtype header and a plain object travel in the data-only encoding."""
    def work(link):
        arr = np.arange(6.0).reshape(2, 3) if link.rank == 1 else None
        a = algorithms.broadcast_value(link, arr, 1)
        cfg = algorithms.broadcast_value(link, {"lr": 0.1, "steps": [1, 2]} if link.rank == 1 else None, 1)
        return a, cfg
    for a, cfg in _run_threads(3, work):
        np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3))
        assert cfg == {"lr": 0.1, "steps": [1, 2]}
