"""Sentences to batches for language models: ``encode_sentences`` and ``BucketSentenceIter``."""
from __future__ import annotations

import bisect
import random

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n", start_label=0,
                     unknown_token=None):
    """Token ids of tokenized sentences, growing a vocabulary as new tokens appear.

    Parameters
    ----------
    sentences : list of list of str
        Tokenized sentences.
    vocab : dict of str to int, optional
        A vocabulary to start from; None makes a new one ``{invalid_key: invalid_label}``.
    invalid_label : int, default -1
        The id skipped when numbering (kept for padding / end of sentence).
    invalid_key : str, default '\\n'
        The token of ``invalid_label`` in a new vocabulary.
    start_label : int, default 0
        The first id given to a new token.
    unknown_token : str, optional
        With a given ``vocab``, unseen tokens become this token; without it an unseen token is an
        error. With a new vocabulary every unseen token is added. As in MXNet 1.9.1, each unseen
        token (re)assigns ``unknown_token`` the next id, so two unseen tokens get different ids.

    Returns
    -------
    result : list of list of int
    vocab : dict of str to int
    """
    idx = start_label
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    res = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                assert new_vocab or unknown_token, "Unknown token %s" % word
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab


class BucketSentenceIter(DataIter):
    """Batches of equal-length sentences for ``BucketingModule``; the label of each step is the next token.

    Each sentence goes to the smallest bucket (a length) that holds it and is padded with
    ``invalid_label``; sentences longer than the largest bucket are discarded (with a printed
    warning). Each batch carries ``bucket_key`` = its bucket's length; ``default_bucket_key`` is the
    largest. ``reset`` shuffles the batch order (``random``) and each bucket's rows (``np.random``).

    Parameters
    ----------
    sentences : list of list of int
        Encoded sentences.
    batch_size : int
    buckets : list of int, optional
        The bucket lengths; by default every length that at least ``batch_size`` sentences have.
    invalid_label : int, default -1
        The padding id, also the label after the last token.
    data_name, label_name : str, default 'data', 'softmax_label'
    dtype : str, default 'float32'
    layout : str, default 'NT'
        ``'NT'`` batches are ``(batch_size, length)``, ``'TN'`` ``(length, batch_size)``.
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name="data",
                 label_name="softmax_label", dtype="float32", layout="NT"):
        super().__init__()
        if not buckets:
            buckets = [i for i, j in enumerate(np.bincount([len(s) for s in sentences])) if j >= batch_size]
        buckets.sort()
        ndiscard = 0
        self.data = [[] for _ in buckets]
        used = set()
        for sent in sentences:
            buck = bisect.bisect_left(buckets, len(sent))
            if buck == len(buckets):
                ndiscard += 1
                continue
            used.add(buck)
            buff = np.full((buckets[buck],), invalid_label, dtype=dtype)
            buff[:len(sent)] = sent
            self.data[buck].append(buff)
        # buckets no sentence fell into are dropped, and so are their (empty) row lists
        buckets = [b for i, b in enumerate(buckets) if i in used]
        self.data = [np.asarray(rows, dtype=dtype) for rows in self.data if rows]
        print("WARNING: discarded %d sentences longer than the largest bucket." % ndiscard)

        self.batch_size = batch_size
        self.buckets = buckets
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.nddata = []
        self.ndlabel = []
        self.major_axis = layout.find("N")
        self.layout = layout
        self.default_bucket_key = max(buckets)
        if self.major_axis == 0:
            shape = (batch_size, self.default_bucket_key)
        elif self.major_axis == 1:
            shape = (self.default_bucket_key, batch_size)
        else:
            raise ValueError("Invalid layout %s: Must by NT (batch major) or TN (time major)" % layout)
        self.provide_data = [DataDesc(name=self.data_name, shape=shape, layout=self.layout)]
        self.provide_label = [DataDesc(name=self.label_name, shape=shape, layout=self.layout)]
        # (bucket, first row) of every full batch; a bucket's last partial batch is never used
        self.idx = []
        for i, buck in enumerate(self.data):
            self.idx.extend([(i, j) for j in range(0, len(buck) - batch_size + 1, batch_size)])
        self.curr_idx = 0
        self.reset()

    def reset(self):
        """Back to the first batch, with the batch order and each bucket's rows reshuffled."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for buck in self.data:
            np.random.shuffle(buck)
        self.nddata = []
        self.ndlabel = []
        for buck in self.data:
            label = np.empty_like(buck)
            label[:, :-1] = buck[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(buck, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        """The next batch (``bucket_key`` set, ``provide_data``/``provide_label`` of its own shape)."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        layout = self.layout
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape, layout=layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape, layout=layout)])
