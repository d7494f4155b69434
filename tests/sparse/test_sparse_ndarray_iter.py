"""NDArrayIter over a csr input: batches stay csr (rows gathered as csr, never made dense)."""
import numpy as np
import pytest

import mxref as mx
from mxref.io.ndarray_iter import take_csr_rows
from mxref.ops.sparse.base import CSR, fromdense, todense


def _dense(n=10, k=6):
    d = np.zeros((n, k), np.float32)
    d[np.arange(n), np.arange(n) % k] = np.arange(1, n + 1)
    d[3] = 0                      # an empty row
    d[5, [0, 4]] = [7, 8]
    return d


@pytest.mark.parametrize("mode", ["discard", "pad", "roll_over"])
def test_batches_are_csr_rows_of_the_input(mode):
    d = _dense()
    it = mx.io.NDArrayIter(mx.nd.array(d).tostype("csr"), mx.nd.arange(10), batch_size=4,
                           last_batch_handle=mode, shuffle=True)
    seen = 0
    for _ in range(2):
        it.reset()
        for b in it:
            x = b.data[0]
            assert x.stype == "csr" and x.shape == (4, 6)
            x.check_format()
            np.testing.assert_array_equal(x.asnumpy(), d[b.label[0].asnumpy().astype(int)])
            seen += 1
    assert seen >= 4


def test_take_csr_rows_handles_repeats_and_empty_rows():
    d = _dense()
    host = fromdense(d, "csr")
    for positions in ([3, 3, 5, 0], [], [9], list(range(10))[::-1]):
        got = take_csr_rows(host, np.array(positions, dtype=np.int64))
        assert isinstance(got, CSR) and got.shape == (len(positions), 6)
        np.testing.assert_array_equal(todense(got), d[positions].reshape(len(positions), 6))


def test_a_wide_csr_input_is_not_made_dense():
    """10^8 columns: a dense batch of 32 rows would be 12.8 GB; the csr batch holds 3 entries."""
    k = 10 ** 8
    a = mx.nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [5, k - 1, 17], [0, 1, 1, 3] + [3] * 61), shape=(64, k))
    it = mx.io.NDArrayIter(a, batch_size=32, last_batch_handle="discard")
    b = next(iter(it))
    assert b.data[0].stype == "csr" and b.data[0].shape == (32, k)
    assert b.data[0].indices.asnumpy().tolist() == [5, k - 1, 17]
