"""Model-parallel matrix factorization (MXNet's ``example/model-parallel/matrix_factorization``).

    python examples/model_parallel/matrix_factorization.py [--epochs 3] [--devices 2]

The user and item embedding tables (the big part of the model) live on one device, the dense
layers and the loss on another: the symbol marks them with ``mx.AttrScope(ctx_group='dev1')`` /
``'dev2'`` and ``Module(..., group2ctxs={'dev1': mx.cpu(0), 'dev2': mx.cpu(1)})`` places them. The
embeddings' outputs cross to ``dev2`` through ``_CrossDeviceCopy`` nodes and their gradients cross
back. (MXNet 1.x's Module accepts ``group2ctxs`` too; mxref refuses nothing and ignores nothing:
``--show-placement`` prints each node's device.)

The ratings are synthetic (MovieLens is not bundled): a seeded rank-8 user x item matrix plus
noise, so the root-mean-square error has a known floor (the noise, 0.1). The script prints the
training RMSE and samples/s per epoch.
"""
import argparse
import time

import numpy as np

import mxref as mx


def synthetic_ratings(n, max_user, max_item, rank=8, noise=0.1, seed=0):
    """``(users, items, scores)``: scores of a random rank-``rank`` model plus Gaussian noise."""
    rng = np.random.RandomState(seed)
    u = rng.normal(0, 1 / np.sqrt(rank), (max_user, rank))
    v = rng.normal(0, 1, (max_item, rank))
    users = rng.randint(0, max_user, n)
    items = rng.randint(0, max_item, n)
    scores = (u[users] * v[items]).sum(1) + rng.normal(0, noise, n)
    return users.astype(np.float32), items.astype(np.float32), scores.astype(np.float32)


def mf_net(factor_size, num_hidden, max_user, max_item):
    """MXNet's ``matrix_fact_model_parallel_net``: embeddings on 'dev1', the rest on 'dev2'."""
    with mx.AttrScope(ctx_group="dev1"):
        user = mx.sym.Embedding(data=mx.sym.Variable("user"), input_dim=max_user,
                                output_dim=factor_size, name="user_embed")
        item = mx.sym.Embedding(data=mx.sym.Variable("item"), input_dim=max_item,
                                output_dim=factor_size, name="item_embed")
    with mx.AttrScope(ctx_group="dev2"):
        user = mx.sym.FullyConnected(mx.sym.Activation(user, act_type="relu"), num_hidden=num_hidden,
                                     name="fc_user")
        item = mx.sym.FullyConnected(mx.sym.Activation(item, act_type="relu"), num_hidden=num_hidden,
                                     name="fc_item")
        pred = mx.sym.Flatten(mx.sym.sum(user * item, axis=1))
        return mx.sym.LinearRegressionOutput(data=pred, label=mx.sym.Variable("score"), name="lro")


def train(epochs=3, devices=2, batch_size=256, num_samples=25600, factor_size=64, num_hidden=64,
          max_user=20000, max_item=10000, lr=0.02, show_placement=False, log=print):
    """Train and return ``(rmse per epoch, samples/s per epoch)``."""
    users, items, scores = synthetic_ratings(num_samples, max_user, max_item)
    it = mx.io.NDArrayIter({"user": users, "item": items}, {"score": scores}, batch_size=batch_size,
                           shuffle=False)
    second = mx.cpu(1) if devices == 2 else mx.cpu(0)
    mod = mx.mod.Module(mf_net(factor_size, num_hidden, max_user, max_item), data_names=["user", "item"],
                        label_names=["score"], context=mx.cpu(0),
                        group2ctxs={"dev1": mx.cpu(0), "dev2": second})
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mx.random.seed(0)
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": lr,
                                                           "rescale_grad": 1.0 / batch_size})
    if show_placement:
        log("\n".join(ln for ln in mod._exec_group.execs[0].debug_str().splitlines()
                      if ln.startswith("Op:") or "MB allocated" in ln))
    rmses, speeds = [], []
    for epoch in range(epochs):
        it.reset()
        sq, n = 0.0, 0
        t0 = time.perf_counter()
        for batch in it:
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
            pred = mod.get_outputs()[0].asnumpy().ravel()
            sq += float(((pred - batch.label[0].asnumpy()) ** 2).sum())
            n += pred.size
        mx.nd.waitall()
        dt = time.perf_counter() - t0
        rmses.append((sq / n) ** 0.5)
        speeds.append(n / dt)
        log(f"epoch {epoch}: train RMSE {rmses[-1]:.4f}  {speeds[-1]:.0f} samples/s")
    return rmses, speeds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--devices", type=int, choices=(1, 2), default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--num-samples", type=int, default=25600)
    ap.add_argument("--show-placement", action="store_true")
    args = ap.parse_args()
    train(args.epochs, args.devices, args.batch_size, args.num_samples, show_placement=args.show_placement)


if __name__ == "__main__":
    main()
