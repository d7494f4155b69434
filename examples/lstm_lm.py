"""An LSTM language model in Gluon, trained on a bundled excerpt of Shakespeare's Coriolanus.

    python examples/lstm_lm.py --epochs 10 [--level word] [--hybridize]

The recipe of MXNet's ``gluon/word_language_model``: the text becomes one long sequence of token
ids (characters by default; with ``--level word``, words and an ``<eos>`` ending each line), cut
into ``batch_size`` parallel streams; the model is
Embedding -> LSTM -> Dense over every time step; training runs truncated back-propagation through
time over windows of ``bptt`` steps, carrying the LSTM state from one window to the next but
``detach``-ing it, so gradients stop at the window edge; gradients are clipped by their global norm.
It reports perplexity (``exp`` of the mean cross-entropy) on the first 90% of the text (train) and
the rest (validation), then samples some text from the trained model.
"""
import argparse
import math
import os
import time

import numpy as np

import mxref as mx
from mxref import autograd, gluon

TEXT = os.path.join(os.path.dirname(mx.__file__), "data", "coriolanus.txt")


class Corpus:
    """Token ids of the text, ids in order of first appearance.

    ``level='char'``: every character is a token. ``level='word'``: whitespace-separated words,
    with ``<eos>`` after every non-empty line (the 6 KB text has few repeated words, so a word
    model mostly memorizes it; characters give a validation perplexity that means something).
    """

    def __init__(self, path: str, level: str = "char"):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if level == "char":
            tokens = list(text)
        else:
            tokens = [w for line in text.splitlines() if line.strip() for w in line.split() + ["<eos>"]]
        self.level = level
        self.vocab = list(dict.fromkeys(tokens))
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.ids = np.array([self.index[w] for w in tokens], dtype=np.float32)

    def join(self, tokens) -> str:
        if self.level == "char":
            return "".join(tokens)
        return " ".join(tokens).replace(" <eos> ", "\n").replace("<eos>", "")


def batchify(ids: np.ndarray, batch_size: int) -> mx.nd.NDArray:
    """``(T, batch_size)``: the sequence cut into ``batch_size`` contiguous streams, one per column."""
    n = len(ids) // batch_size
    return mx.nd.array(ids[:n * batch_size].reshape(batch_size, n).T)


class RNNModel(gluon.HybridBlock):
    """Embedding -> dropout -> LSTM -> dropout -> Dense(vocab) applied at every step (layout TNC)."""

    def __init__(self, vocab_size: int, embed: int, hidden: int, layers: int, dropout: float, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embedding = gluon.nn.Embedding(vocab_size, embed)
            self.drop = gluon.nn.Dropout(dropout)
            self.rnn = gluon.rnn.LSTM(hidden, num_layers=layers, dropout=dropout, input_size=embed)
            self.decoder = gluon.nn.Dense(vocab_size, flatten=False, in_units=hidden)

    def hybrid_forward(self, F, inputs, *states):
        output, states = self.rnn(self.drop(self.embedding(inputs)), list(states))
        return self.decoder(self.drop(output)), states

    def begin_state(self, batch_size: int):
        return self.rnn.begin_state(batch_size=batch_size, func=mx.nd.zeros)


def evaluate(model: RNNModel, data: mx.nd.NDArray, bptt: int, loss_fn) -> float:
    """Perplexity of ``data`` (``(T, N)`` token ids) under ``model``, state carried across windows."""
    total, count = 0.0, 0
    states = model.begin_state(data.shape[1])
    for i in range(0, data.shape[0] - 1, bptt):
        seq = min(bptt, data.shape[0] - 1 - i)
        x, y = data[i:i + seq], data[i + 1:i + 1 + seq]
        out, states = model(x, *states)
        total += float(loss_fn(out.reshape((-1, out.shape[-1])), y.reshape((-1,))).sum().asscalar())
        count += y.size
    return math.exp(total / count)


def sample(model: RNNModel, corpus: Corpus, start, n: int, rng: np.random.Generator) -> str:
    """``n`` tokens drawn one at a time from the model's next-token distribution, after ``start``."""
    states, tokens = model.begin_state(1), list(start)
    for t in tokens[:-1]:
        _, states = model(mx.nd.array([[corpus.index[t]]]), *states)
    x = mx.nd.array([[corpus.index[tokens[-1]]]])
    for _ in range(n):
        out, states = model(x, *states)
        p = mx.nd.softmax(out.reshape((-1,))).asnumpy().astype(np.float64)
        nxt = int(rng.choice(len(p), p=p / p.sum()))
        tokens.append(corpus.vocab[nxt])
        x = mx.nd.array([[nxt]])
    return corpus.join(tokens)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--level", choices=("char", "word"), default="char", help="tokens (default char)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--bptt", type=int, default=32, help="time steps per truncated-BPTT window")
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    p.add_argument("--clip", type=float, default=0.5, help="gradient clipping norm per time step and example")
    p.add_argument("--hybridize", action="store_true", help="run the model as one cached graph")
    args = p.parse_args(argv)
    mx.random.seed(0)
    np.random.seed(0)

    corpus = Corpus(TEXT, args.level)
    split = int(len(corpus.ids) * 0.9)
    train, val = batchify(corpus.ids[:split], args.batch_size), batchify(corpus.ids[split:], 2)
    print(f"{len(corpus.ids)} tokens ({args.level}), vocabulary {len(corpus.vocab)}; "
          f"train {train.shape}, val {val.shape}")

    model = RNNModel(len(corpus.vocab), args.embed, args.hidden, args.layers, args.dropout)
    model.initialize(mx.init.Xavier())
    if args.hybridize:
        model.hybridize()
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": args.lr})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    history = {"train": [evaluate(model, train, args.bptt, loss_fn)], "val": []}
    print(f"before training: train perplexity {history['train'][0]:.1f}")
    for epoch in range(args.epochs):
        tic, states = time.time(), model.begin_state(args.batch_size)
        for i in range(0, train.shape[0] - 1, args.bptt):
            seq = min(args.bptt, train.shape[0] - 1 - i)
            x, y = train[i:i + seq], train[i + 1:i + 1 + seq]
            states = [s.detach() for s in states]     # truncate: no gradient into earlier windows
            with autograd.record():
                out, states = model(x, *states)
                loss = loss_fn(out.reshape((-1, out.shape[-1])), y.reshape((-1,)))   # one per token
            loss.backward()
            grads = [q.grad() for q in model.collect_params().values() if q.grad_req != "null"]
            gluon.utils.clip_global_norm(grads, args.clip * seq * args.batch_size)
            trainer.step(seq * args.batch_size)
        history["train"].append(evaluate(model, train, args.bptt, loss_fn))
        history["val"].append(evaluate(model, val, args.bptt, loss_fn))
        print(f"epoch {epoch + 1:3d}  train perplexity {history['train'][-1]:8.2f}  "
              f"val perplexity {history['val'][-1]:8.2f}  ({time.time() - tic:.2f}s)")
    start = "MENENIUS:\n" if args.level == "char" else ["MENENIUS:", "<eos>"]
    print("sample:", sample(model, corpus, start, 200 if args.level == "char" else 30,
                            np.random.default_rng(0)))
    return history


if __name__ == "__main__":
    main()
