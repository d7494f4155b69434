"""Key placement (greedy bin-packing, big arrays split) and role assignment, without MPI."""
import pytest

import mxref as mx
from mxref.kvstore.ps import Part, Placement, assign_roles

# Parameter sizes (elements) of a small ResNet-like model: many small, a few large tensors.
RESNETISH = [("conv0", 9408), ("bn0", 64)] + [(f"l{i}_conv", 36864 * (1 + i // 4)) for i in range(16)] + \
    [(f"l{i}_bn", 64 * (1 + i // 4)) for i in range(16)] + [("fc_w", 512000), ("fc_b", 1000)]


def test_greedy_bin_packing_beats_hashing():
    """Largest-first onto the least-loaded server: the heaviest server holds at most the average
    plus one key (the LPT bound), and no more than MXNet's (key*9973) % S hash would give it."""
    s = 4
    pl = Placement(s, bound=10 ** 7)
    pl.assign([(k, n, 4) for k, n in RESNETISH])
    loads = pl.loads
    total = sum(n for _, n in RESNETISH) * 4
    assert sum(loads) == total
    assert max(loads) <= total / s + max(n for _, n in RESNETISH) * 4
    hashed = [0] * s
    for i, (_, n) in enumerate(RESNETISH):
        hashed[(i * 9973) % s] += n * 4
    assert max(loads) <= max(hashed)
    assert max(loads) / min(loads) < 1.3, loads


def test_ties_and_order_are_deterministic():
    """Equal sizes keep the caller's order and ties go to the lowest server: every worker agrees."""
    a, b = Placement(3, bound=100), Placement(3, bound=100)
    keys = [("x", 10, 4), ("y", 10, 4), ("z", 10, 4), ("w", 20, 4)]
    a.assign(keys)
    b.assign(keys)
    assert a.table() == b.table()
    assert a.parts("w") == [Part(0, 0, 20)]
    assert [a.parts(k)[0].server for k in "xyz"] == [1, 2, 1]


def test_big_arrays_split_across_all_servers():
    """At the bound an array is cut into S contiguous parts with MXNet's rounding."""
    pl = Placement(3, bound=1000)
    pl.assign([("big", 1000, 4), ("small", 999, 4)])
    assert pl.parts("big") == [Part(0, 0, 333), Part(1, 333, 667), Part(2, 667, 1000)]
    assert len(pl.parts("small")) == 1
    one = Placement(1, bound=10)
    one.assign([("big", 1000, 4)])
    assert one.parts("big") == [Part(0, 0, 1000)]


def test_keys_placed_once_and_unknown_keys_named(monkeypatch):
    """A key keeps its place across init calls; asking for an unknown key names it."""
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "50")
    pl = Placement(2)
    assert pl.bound == 50
    pl.assign([("a", 10, 4)])
    pl.assign([("a", 10, 4), ("b", 10, 4)])
    assert pl.parts("a") == [Part(0, 0, 10)] and pl.parts("b") == [Part(1, 0, 10)]
    with pytest.raises(mx.MXNetError, match="'c'"):
        pl.parts("c")


def test_roles_servers_first(monkeypatch):
    """Ranks 0..S-1 serve; worker rank = MPI rank - S; S defaults to 1 or MXREF_NUM_SERVERS."""
    monkeypatch.delenv("MXREF_NUM_SERVERS", raising=False)
    r = assign_roles(0, 3)
    assert r.is_server and r.num_servers == 1 and r.num_workers == 2
    monkeypatch.setenv("MXREF_NUM_SERVERS", "2")
    r = assign_roles(3, 5)
    assert r.is_worker and r.rank == 1 and r.num_workers == 3
    assert r.name(3) == "worker 1 (MPI rank 3)" and r.name(1) == "server 1 (MPI rank 1)"


@pytest.mark.parametrize("rank,size,servers,match", [(0, 1, 1, "at least one worker"),
                                                     (0, 4, 0, "at least 1"), (5, 4, 1, "outside")])
def test_roles_refuse_impossible_jobs(rank, size, servers, match):
    """Jobs without a worker or a server, or ranks out of range, are refused with the numbers."""
    with pytest.raises(mx.MXNetError, match=match):
        assign_roles(rank, size, servers)
