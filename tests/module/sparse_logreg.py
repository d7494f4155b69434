"""A tiny sparse logistic regression for the Module tests: the LibSVM data, the Module loop of
MXNet's sparse examples, and the same SGD in numpy as the reference (run by the local test and
by the mpiexec program ``tests/mpi_programs/kv_sparse_module.py``)."""
import numpy as np

import mxref as mx

FEATURES, ROWS, NNZ, BATCH, LR, EPOCHS = 40, 240, 5, 8, 1.0, 4


def write_data(path) -> None:
    """Lines of one fixed width, so the byte-range shards of 2 or 3 parts are exactly 120 or 80
    rows (whole batches: no epoch ends in a wrapped batch, and every worker pushes alike)."""
    rng = np.random.default_rng(3)
    w_true = rng.standard_normal(FEATURES)
    with open(path, "w") as f:
        for _ in range(ROWS):
            idx = np.sort(rng.choice(FEATURES, NNZ, replace=False))
            val = rng.random(NNZ).round(3) + 0.1
            f.write(f"{int(val @ w_true[idx] > 0)} " + " ".join(f"{i:02d}:{v:.3f}" for i, v in zip(idx, val))
                    + "\n")


def w_init() -> np.ndarray:
    return np.random.default_rng(4).normal(0, 0.1, (FEATURES, 1)).astype(np.float32)


def batches(path, num_parts=1, part_index=0):
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(FEATURES,), batch_size=BATCH,
                          num_parts=num_parts, part_index=part_index)
    return it


def train_module(path, kv, num_parts=1, part_index=0):
    """MXNet's loop: prepare (row_sparse_pull of the batch's rows), forward_backward, update."""
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("weight", shape=(FEATURES, 1), stype="row_sparse")
    b = mx.sym.Variable("bias", shape=(1,))
    y = mx.sym.Variable("softmax_label")
    net = mx.sym.LogisticRegressionOutput(mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b),
                                          mx.sym.reshape(y, shape=(-1, 1)), name="out")
    it = batches(path, num_parts, part_index)
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(arg_params={"weight": mx.nd.array(w_init()), "bias": mx.nd.zeros((1,))})
    opt = mx.optimizer.SGD(learning_rate=LR, rescale_grad=1.0 / BATCH / kv.num_workers)
    mod.init_optimizer(optimizer=opt, kvstore=kv)
    pulled = []
    for _ in range(EPOCHS):
        it.reset()
        for batch in it:
            mod.prepare(batch, sparse_row_id_fn=lambda d: {"weight": d.data[0].indices})
            pulled.append((mod._exec_group.param_arrays[0][0].indices.asnumpy().tolist(),
                           sorted(set(batch.data[0].indices.asnumpy().tolist()))))
            mod.forward_backward(batch)
            mod.update()
    mod.prepare(None, sparse_row_id_fn=lambda d: {"weight": mx.nd.arange(0, FEATURES, dtype="int64")})
    args, _ = mod.get_params()
    return args["weight"].asnumpy(), float(args["bias"].asnumpy()[0]), pulled


def train_numpy(path, num_parts=1):
    """The same steps in numpy: each step sums the parts' batch gradients (dist_sync)."""
    streams = [batches(path, num_parts, p) for p in range(num_parts)]
    w, b = w_init()[:, 0].astype(np.float64), 0.0
    for _ in range(EPOCHS):
        for s in streams:
            s.reset()
        while True:
            got = [next(_all(s), None) for s in streams]
            if any(g is None for g in got):
                break
            gw, gb = np.zeros_like(w), 0.0
            for data, _, _ in got:
                rows = np.repeat(np.arange(BATCH), np.diff(data.indptr))
                z = b + np.bincount(rows, weights=w[data.indices] * data.data, minlength=BATCH)
                g = 1 / (1 + np.exp(-z)) - data.labels
                gw += np.bincount(data.indices, weights=g[rows] * data.data, minlength=FEATURES)
                gb += g.sum()
            w -= LR * gw / (BATCH * num_parts)
            b -= LR * gb / (BATCH * num_parts)
    return w, b


def accuracy(path, w, b) -> float:
    it = batches(path)
    hits = total = 0
    for data, _, pad in _all(it):
        rows = np.repeat(np.arange(BATCH), np.diff(data.indptr))
        z = b + np.bincount(rows, weights=w[data.indices] * data.data, minlength=BATCH)
        keep = BATCH - pad
        hits += int(((z[:keep] > 0) == (data.labels[:keep] > 0.5)).sum())
        total += keep
    return hits / total


def _all(it):
    """The rest of the epoch's batches as ``(data, label, pad)`` numpy triples."""
    while True:
        try:
            yield it.next_csr()
        except StopIteration:
            return
