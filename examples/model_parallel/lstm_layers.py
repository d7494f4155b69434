"""A stacked LSTM language model with one layer per device (MXNet's old ``model-parallel/lstm``).

    python examples/model_parallel/lstm_layers.py [--epochs 2] [--layers 2] [--devices 2]

The embedding runs on ``cpu(0)``, LSTM layer ``l`` on ``cpu(l % devices)`` and the decoder (a
dense layer over the vocabulary) with the last layer: each part is built inside
``mx.AttrScope(ctx_group=...)`` and ``Module(..., group2ctxs=...)`` maps the groups to devices.
Each layer is one fused ``RNN`` operator (``mode='lstm'``), so a layer's time steps run as one
operation and, in the forward pass, layer ``l+1`` of one batch overlaps nothing (it needs all of
layer ``l``'s output) but the copies of the activations between devices run on the copy workers.
The data is the bundled opening of *Coriolanus* (characters); it prints the training perplexity
(``exp`` of the mean cross-entropy) per epoch.
"""
import argparse
import math
import os
import time

import numpy as np

import mxref as mx

TEXT = os.path.join(os.path.dirname(mx.__file__), "data", "coriolanus.txt")


def windows(seq_len):
    """``(inputs, next characters)`` of shape ``(n, seq_len)`` and the vocabulary size."""
    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    vocab = {c: i for i, c in enumerate(dict.fromkeys(text))}
    ids = np.array([vocab[c] for c in text], np.float32)
    n = (len(ids) - 1) // seq_len
    return (ids[:n * seq_len].reshape(n, seq_len), ids[1:n * seq_len + 1].reshape(n, seq_len), len(vocab))


def lstm_net(vocab, num_layers, hidden, embed, batch_size, seq_len):
    """``(batch, T)`` ids -> per-step class scores; group ``embed``, ``layer<l>``, ``decode``."""
    with mx.AttrScope(ctx_group="embed"):
        h = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=vocab, output_dim=embed, name="embed")
        h = mx.sym.transpose(h, axes=(1, 0, 2))                    # (T, batch, embed): RNN's layout
    for layer in range(num_layers):
        with mx.AttrScope(ctx_group=f"layer{layer}"):
            zeros = mx.sym.zeros(shape=(1, batch_size, hidden))
            h = mx.sym.RNN(data=h, parameters=mx.sym.Variable(f"lstm{layer}_weight"), state=zeros,
                           state_cell=zeros, state_size=hidden, num_layers=1, mode="lstm",
                           name=f"lstm{layer}")
    with mx.AttrScope(ctx_group="decode"):
        h = mx.sym.Reshape(mx.sym.transpose(h, axes=(1, 0, 2)), shape=(-1, hidden))
        h = mx.sym.FullyConnected(h, num_hidden=vocab, name="decoder")
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(h, label=label, name="softmax")


def group2ctxs(num_layers, devices):
    g2c = {"embed": mx.cpu(0), "decode": mx.cpu((num_layers - 1) % devices)}
    g2c.update({f"layer{layer}": mx.cpu(layer % devices) for layer in range(num_layers)})
    return g2c


def train(epochs=2, num_layers=2, devices=2, hidden=128, embed=32, batch_size=16, seq_len=32,
          lr=0.01, log=print):
    """Train; returns the perplexity per epoch."""
    x, y, vocab = windows(seq_len)
    it = mx.io.NDArrayIter(x, y, batch_size=batch_size, shuffle=True, last_batch_handle="discard")
    mod = mx.mod.Module(lstm_net(vocab, num_layers, hidden, embed, batch_size, seq_len),
                        context=mx.cpu(0), group2ctxs=group2ctxs(num_layers, devices))
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mx.random.seed(0)
    mod.init_params(initializer=mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": lr,
                                                           "rescale_grad": 1.0 / (batch_size * seq_len)})
    exe = mod._exec_group.execs[0]
    log("placement: " + ", ".join(f"lstm{layer} on {exe.arg_dict[f'lstm{layer}_weight'].context}"
                                  for layer in range(num_layers))
        + f", decoder on {exe.arg_dict['decoder_weight'].context}")
    perplexities = []
    for epoch in range(epochs):
        it.reset()
        nll, n, t0 = 0.0, 0, time.perf_counter()
        for batch in it:
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
            prob = mod.get_outputs()[0].asnumpy()
            label = batch.label[0].asnumpy().ravel().astype(int)
            nll -= float(np.log(np.maximum(prob[np.arange(label.size), label], 1e-10)).sum())
            n += label.size
        perplexities.append(math.exp(nll / n))
        log(f"epoch {epoch}: train perplexity {perplexities[-1]:.2f}  "
            f"({n / (time.perf_counter() - t0):.0f} chars/s)")
    return perplexities


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=128)
    args = ap.parse_args()
    train(args.epochs, args.layers, args.devices, args.hidden)


if __name__ == "__main__":
    main()
