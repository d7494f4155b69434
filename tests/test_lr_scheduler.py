"""Learning-rate schedules: closed forms, warm-up, statefulness, validation, MXNet 1.9.1 numbers."""
import math

import pytest

from mxref import lr_scheduler as lrs


def test_factor_matches_closed_form():
    """FactorScheduler gives base * f**floor((n-1)/step), num_update counted from 1 (item 9)."""
    s = lrs.FactorScheduler(step=4, factor=0.7, base_lr=0.3)
    for n in range(1, 30):
        assert s(n) == pytest.approx(0.3 * 0.7 ** ((n - 1) // 4), rel=1e-12)


def test_factor_clamps_at_stop_factor_lr():
    """The rate never drops below stop_factor_lr."""
    s = lrs.FactorScheduler(step=1, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0)
    assert [s(n) for n in range(1, 7)] == pytest.approx([1.0, 0.1, 0.01, 1e-3, 1e-3, 1e-3])


def test_factor_is_stateful():
    """Once lowered, the rate stays lowered even for a smaller num_update."""
    s = lrs.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    assert s(5) == 0.25
    assert s(1) == 0.25


def test_factor_with_warmup_matches_mxnet():
    """Numbers from MXNet 1.9.1: FactorScheduler(step=3, factor=0.5, stop_factor_lr=0.1,
    base_lr=1.0, warmup_steps=2, warmup_begin_lr=0.2), called for n = 0..13."""
    s = lrs.FactorScheduler(step=3, factor=0.5, stop_factor_lr=0.1, base_lr=1.0, warmup_steps=2,
                            warmup_begin_lr=0.2)
    want = [0.2, 0.6, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125, 0.1]
    assert [s(n) for n in range(14)] == pytest.approx(want)


def test_multifactor_matches_mxnet():
    """MXNet 1.9.1: MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0) for n = 1..8."""
    s = lrs.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    want = [1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01]
    assert [s(n) for n in range(1, 9)] == pytest.approx(want)


def test_poly_matches_formula_and_mxnet():
    """PolyScheduler with constant warm-up; MXNet 1.9.1: PolyScheduler(max_update=10, base_lr=1.0,
    pwr=2, final_lr=0.1, warmup_steps=2, warmup_begin_lr=0.5, warmup_mode='constant'), n = 0..12."""
    s = lrs.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1, warmup_steps=2,
                          warmup_begin_lr=0.5, warmup_mode="constant")
    got = [s(n) for n in range(13)]
    want = [0.5, 0.5, 1.0, 0.789062, 0.60625, 0.451562, 0.325, 0.226562, 0.15625, 0.114063, 0.1,
            0.1, 0.1]
    assert got == pytest.approx(want, abs=1e-6)
    for n in range(2, 11):
        assert got[n] == pytest.approx(0.1 + 0.9 * (1 - (n - 2) / 8) ** 2)


def test_cosine_matches_formula_and_mxnet():
    """CosineScheduler with linear warm-up; MXNet 1.9.1: CosineScheduler(max_update=8, base_lr=2.0,
    final_lr=0.5, warmup_steps=4, warmup_begin_lr=0.0), n = 0..10."""
    s = lrs.CosineScheduler(max_update=8, base_lr=2.0, final_lr=0.5, warmup_steps=4)
    got = [s(n) for n in range(11)]
    want = [0.0, 0.5, 1.0, 1.5, 2.0, 1.78033, 1.25, 0.71967, 0.5, 0.5, 0.5]
    assert got == pytest.approx(want, abs=1e-5)
    assert got[6] == pytest.approx(0.5 + 1.5 * (1 + math.cos(math.pi * 2 / 4)) / 2)


@pytest.mark.parametrize("make", [
    lambda: lrs.FactorScheduler(step=0),
    lambda: lrs.FactorScheduler(step=2, factor=1.5),
    lambda: lrs.MultiFactorScheduler(step=[3, 3]),
    lambda: lrs.MultiFactorScheduler(step=[0, 3]),
    lambda: lrs.PolyScheduler(max_update=0),
    lambda: lrs.CosineScheduler(max_update=5, warmup_mode="cubic"),
    lambda: lrs.LRScheduler(base_lr=0.1, warmup_begin_lr=0.5),
    lambda: lrs.LRScheduler(warmup_steps=-1),
])
def test_bad_arguments_raise(make):
    """Invalid schedules are refused at construction with ValueError (as MXNet)."""
    with pytest.raises(ValueError):
        make()


def test_base_class_must_be_overridden():
    """Calling the bare LRScheduler is an error."""
    with pytest.raises(NotImplementedError):
        lrs.LRScheduler()(1)
