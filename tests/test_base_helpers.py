"""mxref.base's MXNet helpers: py_str, _as_list, data_dir, NotImplementedForSymbol, mx_real_t."""
import os

import numpy as np
import pytest

import mxref as mx
from mxref.base import (
    MXNetError,
    NotImplementedForSymbol,
    _as_list,
    data_dir,
    data_dir_default,
    mx_real_t,
    py_str,
)


def test_py_str_and_as_list():
    assert py_str(b"abc") == "abc" and py_str("abc") == "abc"
    assert _as_list(3) == [3]
    t = (1, 2)
    assert _as_list(t) is t


def test_data_dir_follows_mxnet_home(monkeypatch):
    monkeypatch.delenv("MXNET_HOME", raising=False)
    assert data_dir() == data_dir_default() == os.path.join(os.path.expanduser("~"), ".mxnet")
    monkeypatch.setenv("MXNET_HOME", "/tmp/mxref_data")
    assert data_dir() == "/tmp/mxref_data"


def test_bool_of_a_symbol_is_not_implemented_for_symbol():
    with pytest.raises(NotImplementedForSymbol, match="not implemented for Symbol") as info:
        bool(mx.sym.Variable("x"))
    assert isinstance(info.value, MXNetError)
    err = NotImplementedForSymbol(len, "len", 1)
    assert str(err) == ("Function len (namely operator \"len\") with arguments (<class 'int'>) "
                        "is not implemented for Symbol and only available in NDArray.")


def test_mx_real_t_is_float32():
    assert mx_real_t is np.float32


def test_mxnet_error_is_a_runtime_error_as_in_mxnet():
    assert issubclass(MXNetError, RuntimeError)
    with pytest.raises(RuntimeError):                   # an operator's error
        mx.nd.Reshape(mx.nd.zeros((2,)), shape=(3,))
