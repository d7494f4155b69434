"""mxref.util: the NumPy shape switch (thread-local or global), NumPy array semantics staying off
(turning it on is a clear error), env access."""
import threading

import pytest

import mxref as mx
from mxref import util
from mxref.base import MXNetError


def test_numpy_semantics_are_off_by_default_and_queries_say_so():
    assert util.is_np_shape() is False and util.is_np_array() is False
    assert mx.is_np_shape() is False and mx.is_np_array() is False
    assert util.set_np_shape(False) is False
    assert util.set_np_shape(0) is False
    util.reset_np()
    util.set_np(shape=False, array=False)


def test_shape_semantics_switch_per_thread_and_in_scopes():
    assert util.set_np_shape(True) is False and util.is_np_shape()
    seen = []
    t = threading.Thread(target=lambda: seen.append(util.is_np_shape()))
    t.start()
    t.join()
    assert seen == [False]                        # per thread, as MXNet's
    assert util.set_np_shape(False) is True and not util.is_np_shape()
    with util.np_shape():
        assert mx.is_np_shape()
        with util.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    assert not mx.is_np_shape()
    util.set_np(shape=True, array=False)
    assert util.is_np_shape()
    util.reset_np()
    assert not util.is_np_shape()


@pytest.mark.parametrize("turn_on", [
    lambda: util.set_np(),
    lambda: util.np_array(True).__enter__(),
])
def test_turning_array_semantics_on_raises_naming_the_missing_front_end(turn_on):
    with pytest.raises(MXNetError, match="no mx.np front end"):
        turn_on()


def test_scalars_and_zero_size_arrays_need_shape_semantics():
    """Legacy semantics reads () and 0 dims as unknown (MXNet raises); np_shape makes them real."""
    for make in (mx.nd.zeros, mx.nd.ones):
        for shape in ((), (0, 1, 3, 0)):
            with pytest.raises(MXNetError, match="np_shape"):
                make(shape)
    with pytest.raises(MXNetError, match="tile"):
        mx.nd.tile(mx.nd.ones((2, 2)), (1, 0))
    with mx.np_shape():
        assert mx.nd.ones(()).asnumpy() == 1 and mx.nd.ones(()).shape == ()
        assert mx.nd.zeros((0, 1, 0, 4)).shape == (0, 1, 0, 4)
        cat = mx.nd.concat(mx.nd.ones((0, 3)), mx.nd.ones((2, 3)), mx.nd.ones((0, 3)), dim=0)
        assert cat.shape == (2, 3)
        assert mx.nd.tile(mx.nd.ones((2, 2)), (1, 0)).shape == (2, 0)
        with pytest.raises(MXNetError, match="size should be > 0"):
            mx.nd.zeros((5, 0)).max()


def test_set_np_array_without_shape_is_a_value_error_as_in_mxnet():
    with pytest.raises(ValueError, match="Shape semantics is required"):
        util.set_np(shape=False, array=True)


def test_scopes_that_keep_numpy_semantics_off_work_and_nest():
    with util.np_shape(False), util.np_array(False):
        assert not util.is_np_shape() and not util.is_np_array()
        with mx.np_array(False):
            assert not mx.is_np_array()
    assert not util.is_np_array()


def test_decorators_wrap_and_raise_only_when_the_code_runs():
    @util.use_np
    def f(x):
        """doc"""
        return x

    assert f.__name__ == "f" and f.__doc__ == "doc"
    with pytest.raises(MXNetError, match="no mx.np front end"):
        f(1)

    @util.use_np_shape
    class C:
        def g(self):
            return util.is_np_shape()

        @property
        def p(self):
            return util.is_np_shape()

    assert C().g() is True and C().p is True and not util.is_np_shape()
    with pytest.raises(TypeError, match="can only decorate"):
        util.use_np_array(3)


def test_array_scope_is_per_thread():
    seen = []

    def other():
        seen.append(util.is_np_array())

    with util.np_array(False):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == [False]


def test_getenv_setenv_round_trip(monkeypatch):
    monkeypatch.delenv("MXREF_TEST_UTIL_VAR", raising=False)
    assert util.getenv("MXREF_TEST_UTIL_VAR") is None
    util.setenv("MXREF_TEST_UTIL_VAR", "7")
    assert util.getenv("MXREF_TEST_UTIL_VAR") == "7"
    util.setenv("MXREF_TEST_UTIL_VAR", None)
    assert util.getenv("MXREF_TEST_UTIL_VAR") is None


def test_set_module_and_gpu_count():
    @util.set_module("mxnet.foo")
    def h():
        pass

    assert h.__module__ == "mxnet.foo"
    assert util.get_gpu_count() == mx.context.num_gpus()


def test_np_shape_switch_thread_local_and_global():
    """set_np_shape(True)/1 is this thread's, 2 every thread's, 0 turns both off; np_shape scopes
    restore the previous state; set_np(shape=True, array=False) is the global switch."""
    seen = []

    def other():
        seen.append(util.is_np_shape())

    try:
        assert util.set_np_shape(True) is False and util.is_np_shape()
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert util.set_np_shape(2) is True
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == [False, True] and util.np_shape_mode() == 2
        util.set_np_shape(0)
        assert not util.is_np_shape() and util.np_shape_mode() == 0
        with util.np_shape(True):
            assert util.is_np_shape() and util.np_shape_mode() == 1
            with util.np_shape(False):
                assert not util.is_np_shape()
            assert util.is_np_shape()
        assert not util.is_np_shape()
        util.set_np(shape=True, array=False)
        assert util.np_shape_mode() == 2
    finally:
        util.reset_np()
    assert not util.is_np_shape()
    with pytest.raises(MXNetError, match="set_np_shape"):
        util.set_np_shape(3)
