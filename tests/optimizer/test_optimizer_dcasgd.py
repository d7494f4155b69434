"""``DCASGD``: the delay-compensated step (numpy) with and without momentum; in a dist_async job."""
import numpy as np
import pytest
from opt_steps import check_multi_precision, clip, run_and_compare

import mxref as mx
from mxref import optimizer as opt


def np_dcasgd(w, g, st, t, lr, wd, o, shared):
    g = clip(o.rescale_grad * g, o.clip_gradient)
    prev = st.get("prev", w)
    step = -lr * (g + wd * w + o.lamda * g * g * (w - prev))
    st["m"] = o.momentum * st.get("m", 0) + step if o.momentum else step
    st["prev"] = w
    return w + st["m"]


@pytest.mark.parametrize("kw", [dict(learning_rate=0.1), dict(learning_rate=0.1, momentum=0.9, lamda=0.5, wd=0.1),
                                dict(learning_rate=0.2, lamda=2.0, rescale_grad=0.5, clip_gradient=0.3)])
def test_dcasgd_follows_formula(kw):
    """Five steps: the compensation lamda*g*g*(w - w_prev) uses the weight the last update left."""
    run_and_compare("dcasgd", np_dcasgd, kw)


def test_dcasgd_state_and_multi_precision():
    """State: (momentum or None, a copy of the weight); float16 through a float32 master copy."""
    w = mx.nd.array([1.0, 2.0])
    mom, prev = opt.DCASGD().create_state(0, w)
    assert mom is None and prev.asnumpy().tolist() == [1.0, 2.0] and prev is not w
    mom, _ = opt.DCASGD(momentum=0.5).create_state(0, w)
    assert mom.asnumpy().tolist() == [0.0, 0.0]
    check_multi_precision("dcasgd", learning_rate=0.1, momentum=0.9)
