"""Recursive doubling, Rabenseifner and the algorithm table over the thread link, W = 1..7: every op,
dtype and size against numpy, the same bits on every rank, the table's parsing and override."""
import numpy as np
import pytest
from test_collective_algorithms import DTYPES, _expected, _input, _ops_for, _run_threads

from mxref import collective
from mxref.base import MXNetError
from mxref.collective import halving, selection
from mxref.collective.base import MAX, SUM, reduce_ufunc

SIZES = [0, 1, 2, 3, 5, 8, 203]


@pytest.mark.parametrize("algo", ["doubling", "rabenseifner"])
@pytest.mark.parametrize("world", [1, 2, 3, 4, 5, 6, 7])
def test_every_op_dtype_and_size_equals_numpy(world, algo):
    """Each rank's result equals numpy's reduction of all inputs, byte-identical on all ranks,
    for power-of-two and other world sizes, down to 0 and 1 element."""
    cases = [(n, d, op) for d in DTYPES for op in _ops_for(d) for n in SIZES]

    def work(link):
        out = []
        for i, (n, dtype, op) in enumerate(cases):
            buf = _input(link.rank, n, dtype, i)
            selection.run(link, algo, buf, reduce_ufunc(op, buf.dtype))
            out.append(buf)
        return out
    outs = _run_threads(world, work)
    for i, (n, dtype, op) in enumerate(cases):
        want = _expected(world, n, dtype, op, i)
        for rank in range(world):
            assert outs[rank][i].dtype == np.dtype(dtype)
            np.testing.assert_array_equal(outs[rank][i], want, err_msg=f"rank {rank} n={n} {dtype} op={op}")
            assert outs[rank][i].tobytes() == outs[0][i].tobytes()


@pytest.mark.parametrize("algo", selection.ALGORITHMS)
@pytest.mark.parametrize("world", [2, 3, 5, 6])
def test_inexact_sums_and_signed_zeros_have_the_same_bits_everywhere(world, algo):
    """Float sums in any association and ``max(0.0, -0.0)`` (which keeps its first operand) come
    out bit-identical on every rank: each fold puts the lower ranks' partial result first."""
    def work(link):
        rng = np.random.default_rng(link.rank)
        a = rng.standard_normal(1003).astype(np.float32)
        z = np.where(np.arange(64) % 2, 0.0, -0.0) if link.rank % 2 else np.zeros(64)
        selection.run(link, algo, a, np.add)
        selection.run(link, algo, z, np.maximum)
        return a, z
    outs = _run_threads(world, work)
    want = sum(np.random.default_rng(r).standard_normal(1003).astype(np.float32) for r in range(world))
    for a, z in outs:
        assert a.tobytes() == outs[0][0].tobytes() and z.tobytes() == outs[0][1].tobytes()
        np.testing.assert_allclose(a, want, rtol=1e-5, atol=1e-5)


def test_power_of_two_core_and_schedule():
    """W = 6: ranks 0 and 2 hand over to 1 and 3; the core (1, 3, 4, 5) pairs by XOR of core index."""
    assert [halving.pow2_core(r, 6)[2] for r in range(6)] == [-1, 0, -1, 1, 2, 3]
    assert [halving.core_rank(c, 2) for c in range(4)] == [1, 3, 4, 5]
    assert halving.doubling_schedule(1, 6) == ((3, False), (4, False))
    assert halving.doubling_schedule(5, 6) == ((4, True), (3, True))
    assert halving.doubling_schedule(0, 6) == ()
    assert halving.pow2_core(0, 1) == (1, 0, 0) and halving.doubling_schedule(0, 1) == ()


def test_table_parsing_choice_and_capacity():
    """Rows pick by byte size; one name forces an algorithm; the fused capacity follows doubling."""
    t = selection.AlgorithmTable.parse("doubling:65536,rabenseifner:1048576,ring", "test")
    assert [t.choose(b, b // 4, 4) for b in (0, 65536, 65537, 1 << 20, (1 << 20) + 1)] == \
        ["doubling", "doubling", "rabenseifner", "rabenseifner", "ring"]
    assert t.fused_capacity() == 65536 and str(t) == "doubling:65536,rabenseifner:1048576,ring"
    forced = selection.AlgorithmTable.parse("tree", "test")
    assert forced.choose(1 << 30, 1 << 28, 2) == "tree" and forced.fused_capacity() == 0
    assert selection.AlgorithmTable.parse("doubling", "t").fused_capacity() == selection.FUSED_MAX_BYTES
    for bad in ("", "fast", "doubling:1k,ring", "doubling:10", "ring,doubling:5"):
        with pytest.raises(MXNetError, match="allreduce table|not a byte count|empty"):
            selection.AlgorithmTable.parse(bad, "test")


def test_default_tables_env_override_and_older_threshold(monkeypatch):
    """Each world size gets its measured table (the largest measured W below it otherwise);
    MXREF_COLLECTIVE_ALLREDUCE overrides it, and ring_mincount keeps the older ring/tree rule."""
    monkeypatch.delenv("MXREF_COLLECTIVE_ALLREDUCE", raising=False)
    monkeypatch.delenv("MXREF_COLLECTIVE_RING_MINCOUNT", raising=False)
    for w in (2, 3, 4):
        assert str(selection.table_for(w)) == selection.DEFAULT_TABLES[w]
    assert str(selection.table_for(9)) == selection.DEFAULT_TABLES[max(selection.DEFAULT_TABLES)]
    assert str(selection.table_for(1)) == selection.DEFAULT_TABLES[min(selection.DEFAULT_TABLES)]
    monkeypatch.setenv("MXREF_COLLECTIVE_ALLREDUCE", "ring")
    assert selection.table_for(4).choose(8, 2, 4) == "ring"
    assert selection.table_for(4, "tree").choose(8, 2, 4) == "tree"      # an argument beats the env
    monkeypatch.setenv("MXREF_COLLECTIVE_ALLREDUCE", "doubling:x")
    with pytest.raises(MXNetError, match="MXREF_COLLECTIVE_ALLREDUCE"):
        selection.table_for(2)
    monkeypatch.delenv("MXREF_COLLECTIVE_ALLREDUCE")
    old = selection.table_for(4, ring_mincount=100)
    assert [old.choose(4 * n, n, 4) for n in (100, 101, 3)] == ["tree", "ring", "tree"]


@pytest.mark.parametrize("table", ["doubling", "rabenseifner", "ring", "tree", None])
@pytest.mark.parametrize("check", [True, False])
def test_engine_sums_with_each_table_and_the_check(table, check):
    """Through the public API on thread worlds of 1..5 ranks: closed-form sums and maxima."""
    def work():
        r, w = collective.get_rank(), collective.get_world_size()
        out = []
        for n in (0, 1, 7, 1000):
            a = np.full(n, r + 1.0)
            collective.allreduce(a, "sum")
            b = np.arange(n, dtype=np.int32) * (r + 1)
            collective.allreduce(b, MAX)
            out.append(bool((a == w * (w + 1) / 2).all() and (b == np.arange(n) * w).all()))
        return all(out)
    for world in (1, 2, 3, 4, 5):
        assert all(collective.run_local(world, work, timeout=30, algorithm=table, check=check))


def test_the_check_names_a_rank_that_picks_another_algorithm():
    """Ranks whose tables differ disagree on the algorithm: every rank raises, naming it."""
    def work():
        r = collective.get_rank()
        eng = collective._engine()
        eng.table = selection.AlgorithmTable.parse("ring" if r == 1 else "doubling", "test")
        with pytest.raises(MXNetError, match=r"ranks \[1\] disagree.*algorithm=ring"):
            collective.allreduce(np.ones(4), SUM)
        return True
    assert all(collective.run_local(3, work, timeout=30))
