"""``LBSGD``: gradient accumulation over ``batch_scale`` calls and the warmup strategies (numpy)."""
import math

import numpy as np
import pytest
from opt_steps import check_multi_precision, clip, run_and_compare

from mxref import optimizer as opt


def np_lbsgd(w, g, st, t, lr, wd, o, shared):
    st["n"] = st.get("n", o.init_updates) + 1
    st["cum"] = st.get("cum", 0) + g
    if st["n"] % o.batch_scale:
        return w                                    # accumulating: the weight stays
    g, st["cum"] = st["cum"] / o.batch_scale, 0
    if o.warmup_strategy == "lars":
        w2, g2 = np.sum(w * w), np.sum(g * g)
        lr *= min(max(math.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01), 100)
    else:
        lr *= o._get_lbmult(st["n"])
    st["m"] = o.momentum * st.get("m", 0) - lr * wd * w - lr * clip(o.rescale_grad * g, o.clip_gradient)
    return w + st["m"]


@pytest.mark.parametrize("kw", [
    dict(learning_rate=0.1, batch_scale=2, warmup_epochs=1, updates_per_epoch=4, momentum=0.9, wd=0.01),
    dict(learning_rate=0.1, batch_scale=3, warmup_strategy="sqrt", warmup_epochs=2, updates_per_epoch=2,
         rescale_grad=0.5, clip_gradient=0.2),
    dict(learning_rate=0.05, batch_scale=2, warmup_strategy="lars", wd=0.1, momentum=0.5),
    dict(learning_rate=0.1, batch_scale=1, warmup_strategy="power2", begin_epoch=1, updates_per_epoch=2)])
def test_lbsgd_follows_formula(kw):
    """Six calls per weight: every batch_scale-th one steps with the mean gradient at lr*lbmult."""
    run_and_compare("lbsgd", np_lbsgd, kw, steps=6)


def test_lbsgd_warmup_multipliers():
    """linear / power2 / sqrt rise from 1 to batch_scale over warmup_epochs*updates_per_epoch."""
    for strategy, at_half in (("linear", 2.5), ("power2", 1.75), ("sqrt", 1 + 3 * math.sqrt(0.5)),
                              ("other", 1.0)):
        o = opt.LBSGD(batch_scale=4, warmup_strategy=strategy, warmup_epochs=2, updates_per_epoch=5)
        assert o._get_lbmult(5) == pytest.approx(at_half)
        assert o._get_lbmult(10) == 4.0 and o._get_lbmult(0) == pytest.approx(1.0)


def test_lbsgd_multi_precision():
    check_multi_precision("lbsgd", learning_rate=0.1, momentum=0.9, batch_scale=2)
