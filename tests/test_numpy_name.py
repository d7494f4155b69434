"""mxref.numpy: the ``mxnet.numpy`` name imports, and every use says mxref has no mx.np."""
import pytest

import mxref.numpy as mnp
from mxref.base import MXNetError


def test_any_attribute_raises_mxnet_error_naming_the_missing_front_end():
    with pytest.raises(MXNetError, match="no mx.np front end"):
        mnp.ones((2, 2))


def test_hasattr_and_getattr_default_still_work():
    assert not hasattr(mnp, "ndarray")
    assert getattr(mnp, "concatenate", None) is None
    with pytest.raises(AttributeError):
        _ = mnp.__wrapped__
