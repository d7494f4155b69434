"""The contract every ``Link`` implementation keeps, as one function run by both ranks of a pair.

``check_link(link)`` runs on ranks 0 and 1 of a two-rank link at the same time (threads of one
process for the in-process and TCP links, ``mpiexec -n 2`` for MPI) and raises ``AssertionError``
on the first broken promise. Each rank checks what it received against a closed form, so
nothing depends on timing.
"""
import numpy as np

TAGS = (3, 11, 12)
SIZES = (0, 1, 7, 4099, 1 << 19)        # elements of float64: empty to 4 MB


def _payload(src, tag, i, n, dtype=np.float64):
    return (np.arange(n) + 1000.0 * src + 100.0 * tag + i).astype(dtype)


def check_link(link, nonblocking: bool = True) -> None:
    assert link.world_size == 2 and link.rank in (0, 1)
    me, peer = link.rank, 1 - link.rank
    # 1. sizes 0 / small / large, one direction at a time (a blocking send may wait for its receive).
    for sender in (0, 1):
        for i, n in enumerate(SIZES):
            if me == sender:
                link.send(peer, _payload(me, 0, i, n))
            else:
                got = np.full(n, -1.0)
                link.recv(peer, got)
                assert np.array_equal(got, _payload(peer, 0, i, n)), (sender, n)
    # 2. several tags interleaved: rank 0 sends t0 t1 t2 t0 t1 t2 ...; rank 1 takes them tag by
    #    tag, last tag first; order within each (peer, tag) must hold.
    rounds = 4
    if me == 0:
        for i in range(rounds):
            for tag in TAGS:
                link.send(peer, _payload(me, tag, i, 5 + tag), tag)
    else:
        for tag in reversed(TAGS):
            for i in range(rounds):
                got = np.empty(5 + tag)
                link.recv(peer, got, tag)
                assert np.array_equal(got, _payload(peer, tag, i, 5 + tag)), (tag, i)
    # 3. dtype views: the bytes travel; the receiver may look at them through another dtype.
    if me == 0:
        link.send(peer, np.arange(6, dtype=np.float32), tag=5)
        link.send(peer, np.arange(12, dtype=np.int16).reshape(3, 4), tag=5)
    else:
        raw = np.empty(24, np.uint8)
        link.recv(peer, raw, tag=5)
        assert np.array_equal(raw.view(np.float32), np.arange(6, dtype=np.float32))
        grid = np.empty((2, 6), np.int16)
        link.recv(peer, grid, tag=5)
        assert np.array_equal(grid.reshape(-1), np.arange(12, dtype=np.int16))
    # 4. sendrecv with both ranks sending a large buffer at once must not deadlock.
    out, back = _payload(me, 7, 0, 1 << 18), np.empty(1 << 18)
    link.sendrecv(peer, out, peer, back, tag=7)
    assert np.array_equal(back, _payload(peer, 7, 0, 1 << 18))
    if nonblocking:
        _check_nonblocking(link, me, peer)


def _check_nonblocking(link, me, peer) -> None:
    """isend/irecv match in posting order per (peer, tag); probe reports an unclaimed message."""
    sizes = (0, 3, 1 << 17)
    sends = [link.isend(peer, _payload(me, 20 + k, i, n), 20 + k)
             for i, n in enumerate(sizes) for k in range(2)]
    recvs = []
    for k in (1, 0):
        for i, n in enumerate(sizes):
            buf = np.full(n, -1.0)
            recvs.append((link.irecv(peer, buf, 20 + k), buf, _payload(peer, 20 + k, i, n)))
    for req, _, _ in recvs:
        req.wait(60)
    for req in sends:
        req.wait(60)
    for _, buf, want in recvs:
        assert np.array_equal(buf, want)
    # probe: a message on a tag nobody receives yet is reported with its sender and size.
    hello = np.arange(9, dtype=np.int32)
    req = link.isend(peer, hello, 30)
    found = None
    while found is None:
        found = link.probe(30)
        req.test()
    assert found == (peer, hello.nbytes), found
    assert link.probe(31) is None
    got = np.empty(9, np.int32)
    link.recv(peer, got, 30)
    req.wait(60)
    assert np.array_equal(got, hello)
    # the two ranks leave together, so neither closes while the other still reads.
    flag = np.zeros(1)
    link.sendrecv(peer, np.ones(1), peer, flag, tag=40)
    assert flag[0] == 1
