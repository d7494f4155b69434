"""mxref.testing.environ and runs: environment blocks, silenced stderr, retries, DummyIter."""
import os

import numpy as np
import pytest

import mxref as mx
from mxref.testing.data import DummyIter
from mxref.testing.environ import discard_stderr, environment, set_env_var
from mxref.testing.runs import has_tvm_ops, is_op_runnable, retry
from mxref.util import getenv


def test_environment_sets_and_restores_also_on_error(monkeypatch):
    monkeypatch.setenv("MXREF_T_A", "1")
    monkeypatch.delenv("MXREF_T_B", raising=False)
    with environment({"MXREF_T_A": None, "MXREF_T_B": "2"}):
        assert getenv("MXREF_T_A") is None and getenv("MXREF_T_B") == "2"
    assert os.environ["MXREF_T_A"] == "1" and "MXREF_T_B" not in os.environ
    with pytest.raises(KeyError):
        with environment("MXREF_T_A", "9"):
            assert os.environ["MXREF_T_A"] == "9"
            raise KeyError
    assert os.environ["MXREF_T_A"] == "1"
    assert set_env_var("MXREF_T_B", "3", default_val="none") == "none"
    monkeypatch.delenv("MXREF_T_B")


def test_discard_stderr_silences_file_descriptor_2(capfd):
    with discard_stderr():
        os.write(2, b"hidden\n")
    os.write(2, b"shown\n")
    assert capfd.readouterr().err == "shown\n"


def test_retry_reruns_failed_assertions_only():
    calls = []

    @retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 2

    flaky()
    assert len(calls) == 2

    @retry(2)
    def broken():
        raise AssertionError("always")

    with pytest.raises(AssertionError, match="always"):
        broken()
    assert not has_tvm_ops() and is_op_runnable()


def test_dummy_iter_repeats_the_first_batch():
    real = mx.io.NDArrayIter(np.arange(8.0).reshape(4, 2), np.arange(4.0), batch_size=2)
    it = DummyIter(real)
    first, second = next(it), next(it)
    assert first is second and it.batch_size == 2
    np.testing.assert_array_equal(first.data[0].asnumpy(), [[0, 1], [2, 3]])
    assert it.provide_data == real.provide_data
