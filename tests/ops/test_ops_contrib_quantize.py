"""contrib.quantize / dequantize: MXNet's reference formulas for int8 (zero-centred) and uint8."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


def test_int8_matches_mxnet_test_values():
    a = mx.nd.array([[0.1392, 0.5928], [0.6027, 0.8579]])
    q, lo, hi = mx.nd.contrib.quantize(a, mx.nd.array([0.0]), mx.nd.array([1.0]), out_type="int8")
    assert q.dtype == np.int8 and lo.asnumpy() == -1 and hi.asnumpy() == 1
    np.testing.assert_array_equal(q.asnumpy(), [[18, 75], [77, 109]])
    back = mx.nd.contrib.dequantize(q, lo, hi, out_type="float32").asnumpy()
    np.testing.assert_allclose(back, [[0.14173228, 0.5905512], [0.6062992, 0.8582677]], rtol=1e-6)


def test_saturation_and_uint8():
    a = mx.nd.array([-0.3, 0.5928, 1.3])
    q, lo, hi = mx.nd.contrib.quantize(a, mx.nd.array([-0.5]), mx.nd.array([1.0]), out_type="int8")
    np.testing.assert_array_equal(q.asnumpy(), [-38, 75, 127])        # 1.3 saturates at 127
    q, lo, hi = mx.nd.contrib.quantize(a, mx.nd.array([-0.5]), mx.nd.array([1.0]))
    assert q.dtype == np.uint8 and (lo.asnumpy(), hi.asnumpy()) == (-0.5, 1.0)
    np.testing.assert_array_equal(q.asnumpy(), [34, 186, 255])
    np.testing.assert_allclose(mx.nd.contrib.dequantize(q, lo, hi).asnumpy(),
                               np.array([34, 186, 255]) * 1.5 / 255 - 0.5, rtol=1e-6)


def test_symbol_shapes_types_and_errors():
    s = mx.sym.contrib.quantize(mx.sym.var("x"), mx.sym.var("lo"), mx.sym.var("hi"), out_type="int8")
    shapes = s.infer_shape(x=(2, 3))
    assert shapes[0] == [(2, 3), (1,), (1,)] and shapes[1] == [(2, 3), (1,), (1,)]
    assert s.infer_type(x=np.float32)[1] == [np.int8, np.float32, np.float32]
    with pytest.raises(MXNetError, match="dequantize"):
        mx.nd.contrib.dequantize(mx.nd.ones(2), mx.nd.zeros(1), mx.nd.ones(1))
