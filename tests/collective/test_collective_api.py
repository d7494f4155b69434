"""The module-level Rabit API on the local engine: numpy/NDArray buffers, ops, errors, checkpoints."""
import numpy as np
import pytest

import mxref as mx
from mxref import collective
from mxref.base import MXNetError


def test_one_rank_world_without_init():
    """Without init the API works on a world of one, as Rabit's does."""
    assert collective.get_rank() == 0 and collective.get_world_size() == 1
    assert not collective.is_distributed()
    a = np.arange(4.0)
    assert collective.allreduce(a, collective.SUM) is a
    np.testing.assert_array_equal(a, np.arange(4.0))
    assert collective.broadcast("x", 0) == "x"


@pytest.mark.parametrize("op, want", [("sum", 10.0), ("max", 4.0), ("min", 1.0), ("prod", 24.0),
                                      (collective.SUM, 10.0), ("MAX", 4.0)])
def test_ops_by_code_and_name(op, want):
    """Ops are accepted as constants or case-insensitive names; each rank contributes rank+1."""
    def work():
        a = np.full(5, collective.get_rank() + 1.0)
        collective.allreduce(a, op)
        return a
    for out in collective.run_local(4, work):
        np.testing.assert_array_equal(out, np.full(5, want))


def test_closed_form_sum_and_bitor_at_several_world_sizes():
    """Each worker adds rank+1 (all see n(n+1)/2) and ors bit `rank` (all see 2^n - 1)."""
    for n in range(1, 6):
        def work():
            r = collective.get_rank()
            a = np.array([[r + 1, r + 1]], np.int64)
            b = np.array([1 << r], np.uint32)
            collective.allreduce(a, collective.SUM)
            collective.allreduce(b, collective.BITOR)
            return a, b, collective.get_world_size(), collective.is_distributed()
        for a, b, w, dist in collective.run_local(n, work):
            assert a.shape == (1, 2) and (a == n * (n + 1) // 2).all()
            assert b[0] == 2 ** n - 1 and w == n and dist == (n > 1)


def test_prepare_fun_fills_the_buffer_before_reduction():
    """prepare_fun runs before the data moves (the lazy-allreduce hook)."""
    def work():
        a = np.zeros(3)
        collective.allreduce(a, collective.SUM, prepare_fun=lambda: a.fill(collective.get_rank()))
        return a
    for out in collective.run_local(3, work):
        np.testing.assert_array_equal(out, np.full(3, 3.0))


def test_ndarray_is_waited_for_reduced_in_place_and_readable():
    """An NDArray with pending engine writes is reduced after them and reads back at once."""
    def work():
        x = mx.nd.ones((2, 3)) * (collective.get_rank() + 1)   # pushed to the engine
        collective.allreduce(x, collective.SUM)
        y = mx.nd.zeros((4,))
        collective.allreduce(y, collective.SUM, prepare_fun=lambda: y.__setitem__(slice(None), 2.0))
        return x.asnumpy(), y.asnumpy(), (x + 1).asnumpy()
    for x, y, x1 in collective.run_local(3, work):
        np.testing.assert_array_equal(x, np.full((2, 3), 6.0))
        np.testing.assert_array_equal(y, np.full(4, 6.0))
        np.testing.assert_array_equal(x1, np.full((2, 3), 7.0))


def test_broadcast_arrays_in_place_and_objects_by_pickle():
    """Arrays keep their identity and get root's values; objects come back as root's copy."""
    def work():
        r = collective.get_rank()
        a = np.full((2, 2), float(r))
        out = collective.broadcast(a, 1)
        nd = mx.nd.array([r, r])
        collective.broadcast(nd, 2)
        s = collective.broadcast(f"hello from {r}" if r == 0 else None, 0)
        return out is a, a, nd.asnumpy(), s
    for same, a, nd, s in collective.run_local(3, work):
        assert same and s == "hello from 0"
        np.testing.assert_array_equal(a, np.ones((2, 2)))
        np.testing.assert_array_equal(nd, [2, 2])


def test_broadcast_array_to_ranks_passing_none():
    """The root decides: its array reaches ranks that pass None as a new array of its shape."""
    def work():
        r = collective.get_rank()
        got = collective.broadcast(np.arange(6, dtype=np.int16).reshape(2, 3) if r == 1 else None, 1)
        return got
    for got in collective.run_local(4, work):
        assert got.dtype == np.int16 and got.shape == (2, 3)
        np.testing.assert_array_equal(got, np.arange(6).reshape(2, 3))


def test_broadcast_into_a_wrong_array_names_the_rank_without_hanging():
    """A rank passing a too-small array raises; the ranks below it in the tree still get the data."""
    def work():
        r = collective.get_rank()
        buf = np.zeros(2 if r == 1 else 4)
        if r == 0:
            buf[:] = 7
        if r == 1:
            with pytest.raises(MXNetError, match=r"broadcast: rank 1 passed an array of shape \(2,\).*"
                                                 r"root 0 sent shape \(4,\)"):
                collective.broadcast(buf, 0)
            return None
        collective.broadcast(buf, 0)
        return buf
    out = collective.run_local(5, work)
    for r in (0, 2, 3, 4):
        np.testing.assert_array_equal(out[r], np.full(4, 7.0))


def test_mismatched_sizes_name_the_ranks():
    """Rank 1 passing 3 elements where others pass 4 is an error naming rank 1 on every rank."""
    def work():
        a = np.zeros(3 if collective.get_rank() == 1 else 4)
        with pytest.raises(MXNetError, match=r"allreduce: ranks \[1\] disagree.*rank 1: count=3"):
            collective.allreduce(a, collective.SUM)
        return True
    assert all(collective.run_local(3, work))


def test_mismatched_dtypes_and_ops_name_the_ranks():
    """A dtype or op that differs on one rank is named in the error, not a hang."""
    def work():
        r = collective.get_rank()
        a = np.zeros(4, np.float32 if r == 2 else np.float64)
        with pytest.raises(MXNetError, match=r"ranks \[2\].*dtype=float32"):
            collective.allreduce(a, collective.SUM)
        with pytest.raises(MXNetError, match=r"ranks \[0\].*op=max"):
            collective.allreduce(np.zeros(2), "max" if r == 0 else "sum")
        return True
    assert all(collective.run_local(3, work))


def test_bad_arguments():
    """Unknown ops, bitor on floats, non-contiguous buffers and bad roots raise MXNetError."""
    with pytest.raises(MXNetError, match="unknown op 'avg'"):
        collective.allreduce(np.zeros(2), "avg")
    with pytest.raises(MXNetError, match="bitor needs an integer"):
        collective.allreduce(np.zeros(2), collective.BITOR)
    with pytest.raises(MXNetError, match="C-contiguous"):
        collective.allreduce(np.zeros((4, 4))[:, 1], collective.SUM)
    with pytest.raises(MXNetError, match="numpy array or NDArray"):
        collective.allreduce([1, 2], collective.SUM)
    with pytest.raises(MXNetError, match="root 3 is not a rank"):
        collective.broadcast("x", 3)
    with pytest.raises(MXNetError, match="unknown engine 'nope'"):
        collective.init("nope")


def test_a_failing_rank_stops_the_others_and_is_reported():
    """run_local re-raises the root-cause error; the waiting ranks do not hang."""
    def work():
        if collective.get_rank() == 1:
            raise ValueError("boom on rank 1")
        collective.allreduce(np.zeros(2), collective.SUM)
    with pytest.raises(ValueError, match="boom on rank 1"):
        collective.run_local(3, work, timeout=10)


def test_checkpoints_count_versions_and_copy_the_model():
    """checkpoint bumps version_number and stores a copy; lazy_checkpoint keeps a reference."""
    def work():
        assert collective.load_checkpoint() == (0, None, None)
        model = {"w": np.zeros(2)}
        for _ in range(3):
            model["w"] += 1
            collective.allreduce(model["w"], collective.MAX)
            collective.checkpoint(model, local_model=collective.get_rank())
        model["w"] += 100       # not in the stored copy
        version, gmodel, lmodel = collective.load_checkpoint()
        collective.lazy_checkpoint(model)
        model["w"] += 1         # visible through the lazy reference
        return version, gmodel["w"].copy(), lmodel, collective.version_number(), \
            collective.load_checkpoint()[1]["w"].copy()
    for rank, (version, w, lmodel, v2, lazy_w) in enumerate(collective.run_local(2, work)):
        assert version == 3 and v2 == 4 and lmodel == rank
        np.testing.assert_array_equal(w, [3.0, 3.0])
        np.testing.assert_array_equal(lazy_w, [104.0, 104.0])
