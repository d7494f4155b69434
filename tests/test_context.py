"""Context: construction, equality, the default-context stack and GPU counting."""
import threading

import pytest

import mxref as mx
from mxref.context import Context


def test_cpu_gpu_contexts():
    assert mx.cpu() == mx.cpu(0)
    assert mx.cpu(1) != mx.cpu(0)
    assert str(mx.gpu(2)) == "gpu(2)"
    assert mx.gpu(1).device_type == "gpu" and mx.gpu(1).device_id == 1


def test_with_context_sets_default_and_restores():
    assert mx.current_context() == mx.cpu(0)
    with mx.Context(mx.cpu(3)):
        assert mx.context.current_context() == mx.cpu(3)
        with mx.gpu(1):
            assert mx.current_context() == mx.gpu(1)
        assert mx.current_context() == mx.cpu(3)
    assert mx.current_context() == mx.cpu(0)


def test_default_context_is_thread_local():
    seen = []
    with mx.cpu(5):
        t = threading.Thread(target=lambda: seen.append(mx.current_context()))
        t.start()
        t.join()
    assert seen == [mx.cpu(0)]


def test_num_gpus_never_raises():
    assert mx.context.num_gpus() >= 0


def test_bad_device_type():
    with pytest.raises(mx.MXNetError, match="unknown device type"):
        mx.Context("tpu", 0)
    with pytest.raises(mx.MXNetError, match="device_id"):
        mx.cpu(-1)


def test_nested_with_on_one_context_object_restores_the_outer_default():
    """``with x.context:`` nests on the one Context object arrays share (a HybridBlock calling a
    child): leaving both restores the default from before the outer one."""
    ctx = mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)
    with ctx:
        with ctx:
            assert mx.current_context() == mx.cpu(1)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)


def test_default_ctx_is_this_threads_default_and_settable_on_the_class():
    """Context.default_ctx (MXNet's class property): per thread; ``with`` blocks nest on top."""
    seen = []

    def other():
        Context.default_ctx = mx.cpu(3)
        seen.append(Context.default_ctx)
        with mx.cpu(4):
            seen.append(Context.default_ctx)
        seen.append(mx.current_context())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [mx.cpu(3), mx.cpu(4), mx.cpu(3)]
    assert Context.default_ctx == mx.current_context() == mx.cpu(0)
