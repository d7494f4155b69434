"""``FTML`` (one ``ftml_update`` per step): numpy formula over steps, clip, wd, rescale, multi-precision."""
import numpy as np
import pytest
from opt_steps import check_multi_precision, run_and_compare

import mxref as mx
from mxref import optimizer as opt


def np_ftml(w, g, st, t, lr, wd, o, shared):
    g = o.rescale_grad * g + wd * w
    if o.clip_gradient:
        g = np.clip(g, -o.clip_gradient, o.clip_gradient)
    st["v"] = o.beta2 * st.get("v", 0) + (1 - o.beta2) * g * g
    d_t = (1 - o.beta1 ** t) / lr * (np.sqrt(st["v"] / (1 - o.beta2 ** t)) + o.epsilon)
    st["z"] = o.beta1 * st.get("z", 0) + (1 - o.beta1) * g - (d_t - o.beta1 * st.get("d", 0)) * w
    st["d"] = d_t
    return -st["z"] / d_t


@pytest.mark.parametrize("kw", [{}, dict(learning_rate=0.05, wd=0.1, rescale_grad=0.5, clip_gradient=0.3),
                                dict(beta1=0.5, beta2=0.99, epsilon=1e-6)])
def test_ftml_follows_formula(kw):
    run_and_compare("ftml", np_ftml, kw, rtol=1e-4, atol=1e-5)


def test_ftml_states_and_multi_precision():
    """Three zero states (d, v, z) of the weight's dtype; float16 runs through a master copy."""
    o = opt.FTML()
    assert (o.beta1, o.beta2, o.epsilon) == (0.6, 0.999, 1e-8)
    states = o.create_state(0, mx.nd.ones((2, 3), dtype="float64"))
    assert len(states) == 3 and all(s.dtype == np.float64 and s.asnumpy().sum() == 0 for s in states)
    check_multi_precision("ftml", learning_rate=0.01)
