"""``Nadam``: MXNet 1.9.1's formula (numpy) with its optimizer-wide momentum schedule."""
import numpy as np
import pytest
from opt_steps import check_multi_precision, clip, run_and_compare

from mxref import optimizer as opt


def np_nadam(w, g, st, t, lr, wd, o, shared):
    g = clip(o.rescale_grad * g + wd * w, o.clip_gradient)
    mu_t = o.beta1 * (1 - 0.5 * 0.96 ** (t * o.schedule_decay))
    mu_next = o.beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * o.schedule_decay))
    # NOTE: one schedule for the whole optimizer, advanced at every update of any weight
    shared["m_schedule"] = shared.get("m_schedule", 1.0) * mu_t
    m_next = shared["m_schedule"] * mu_next
    st["m"] = o.beta1 * st.get("m", 0) + (1 - o.beta1) * g
    st["v"] = o.beta2 * st.get("v", 0) + (1 - o.beta2) * g * g
    m_bar = (1 - mu_t) * g / (1 - shared["m_schedule"]) + mu_next * st["m"] / (1 - m_next)
    return w - lr * m_bar / (np.sqrt(st["v"] / (1 - o.beta2 ** t)) + o.epsilon)


@pytest.mark.parametrize("kw", [{}, dict(learning_rate=0.01, wd=0.1, rescale_grad=0.5, clip_gradient=0.3),
                                dict(beta1=0.8, schedule_decay=0.1, epsilon=1e-4)])
def test_nadam_follows_formula(kw):
    """Five steps on two weights; the shared m_schedule advances once per weight per step."""
    o, _ = run_and_compare("nadam", np_nadam, kw, rtol=5e-5, atol=5e-6)
    assert o.m_schedule < 1.0


def test_nadam_defaults_and_multi_precision():
    o = opt.Nadam()
    assert (o.lr, o.beta1, o.beta2, o.epsilon, o.schedule_decay) == (0.001, 0.9, 0.999, 1e-8, 0.004)
    check_multi_precision("nadam", learning_rate=0.01)
