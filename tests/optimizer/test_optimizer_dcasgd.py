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


@pytest.mark.parametrize("kw", [dict(learning_rate=0.1),
                                dict(learning_rate=0.1, momentum=0.9, lamda=0.5, wd=0.1),
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


@pytest.mark.timeout(120)
def test_dcasgd_on_a_dist_async_server_in_process():
    """Two workers push in turn to a dist_async server running DCASGD (events fix the order, the
    in-process link stands in for MPI): the server's weight is the numpy formula applied to the
    pushes in arrival order, the compensation using the weight each previous push left."""
    import threading

    from mxref import kvstore
    from mxref.kvstore.ps.inprocess import run_job

    pushes = [np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5]), np.array([-1.0, 1.0, 0.5]),
              np.array([0.2, 0.4, -0.8])]
    turns = [threading.Event() for _ in range(len(pushes) + 1)]
    turns[0].set()

    def work():
        kv = kvstore.create("dist_async")
        kv.set_optimizer(opt.DCASGD(learning_rate=0.1, momentum=0.5, lamda=1.0))
        kv.init(0, mx.nd.ones((3,)))
        for k in range(kv.rank, len(pushes), kv.num_workers):
            assert turns[k].wait(60)
            kv.push(0, mx.nd.array(pushes[k]))
            mx.nd.waitall()            # applied on the server before the next worker's turn
            turns[k + 1].set()
        kv.barrier()
        out = mx.nd.zeros((3,))
        kv.pull(0, out=out)
        return out.asnumpy()

    results = run_job(work, 2)
    o, st, w = opt.DCASGD(learning_rate=0.1, momentum=0.5, lamda=1.0), {}, np.ones(3)
    for t, g in enumerate(pushes, 1):
        w = np_dcasgd(w, g, st, t, 0.1, 0.0, o, {})
    for got in results:
        np.testing.assert_allclose(got, w, rtol=1e-5)
