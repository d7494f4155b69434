"""``Adamax``: MXNet 1.9.1's formula (numpy) over several steps, with wd, clip, rescale, multi-precision."""
import numpy as np
import pytest
from opt_steps import check_multi_precision, clip, run_and_compare

from mxref import optimizer as opt


def np_adamax(w, g, st, t, lr, wd, o, shared):
    g = clip(o.rescale_grad * g + wd * w, o.clip_gradient)
    st["m"] = o.beta1 * st.get("m", 0) + (1 - o.beta1) * g
    st["u"] = np.maximum(o.beta2 * st.get("u", 0), np.abs(g))
    return w - lr / (1 - o.beta1 ** t) * st["m"] / st["u"]


@pytest.mark.parametrize("kw", [{}, dict(learning_rate=0.01, wd=0.1, rescale_grad=0.5, clip_gradient=0.3),
                                dict(beta1=0.5, beta2=0.9, clip_gradient=0.0 + 0.4)])
def test_adamax_follows_formula(kw):
    """Five steps on a weight (with wd) and a bias (lr_mult 3, no wd) track numpy."""
    run_and_compare("adamax", np_adamax, kw)


def test_adamax_defaults_and_multi_precision():
    """MXNet's defaults (lr 0.002, beta1 0.9, beta2 0.999); float16 through a float32 master copy."""
    o = opt.Adamax()
    assert (o.lr, o.beta1, o.beta2) == (0.002, 0.9, 0.999)
    check_multi_precision("adamax", learning_rate=0.01)
