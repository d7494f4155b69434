"""``mx.io.ImageRecordIter``: NCHW float32 batches decoded and augmented from an image RecordIO file.

Per record, as MXNet's C++ iterator (``iter_image_recordio_2.cc`` + ``image_aug_default.cc``):
decode to RGB -> ``resize`` the shorter edge (``inter_method``, bilinear by default) -> crop
``data_shape``'s HxW (random with ``rand_crop``, else centered; a too-small image is first scaled
up to cover it) -> mirror (``mirror``, or a coin flip with ``rand_mirror``) ->
``(pixel - mean_c) * scale / std_c`` into CxHxW float32. Labels come from the record header
(``label_width`` values) or, with ``path_imglist``, from the ``.lst`` line of the record's id.

Supported parameters: ``path_imgrec``, ``path_imgidx``, ``path_imglist``, ``data_shape``,
``batch_size``, ``label_width``, ``shuffle``, ``seed``, ``rand_crop``, ``rand_mirror``, ``mirror``,
``resize``, ``inter_method`` (0-4, 9, 10), ``mean_r/g/b``, ``std_r/g/b``, ``scale``,
``preprocess_threads``, ``prefetch_buffer``, ``num_parts``, ``part_index``, ``round_batch``,
``data_name``, ``label_name``, ``dtype`` ('float32'), ``verbose``, ``seed_aug`` (the augmentation
seed, ``seed`` when None). Unknown names are accepted with a logged warning, as MXNet accepts
them. MXNet's other augmentation parameters (``max_rotate_angle``, ``max_shear_ratio``,
``random_resized_crop``, ``pad``, ``brightness``, ...) raise MXNetError when set to anything but
their default, rather than being ignored.

Randomness: each record's crop and flip come from a splitmix64 stream keyed by ``(seed, epoch,
record position)``, so a batch does not depend on ``preprocess_threads``; the stream differs from
MXNet's (which draws from per-thread generators), not its distribution. Decoding runs on
``preprocess_threads`` threads (the producing thread and a pool) that take the batch's records one
at a time; each record goes through ``image_record_fast`` (a JPEG decoded by libjpeg straight
into a numpy buffer, then one C loop for resize + crop + mirror + normalize written into the
batch's NDArray; pure mode: Pillow's reader and the loop's numpy twin, the same bits). Pillow's
decoder and the C loop release the GIL, so the threads overlap; the Python left per record (record
header, draws, labels) is small. A background thread keeps up to ``prefetch_buffer`` batches
ready; it holds the iterator only while it builds a batch, so an iterator dropped without
``close()`` still stops its threads. Without ``path_imgidx`` the records are read into memory once.
``round_batch=True`` fills the last batch from the start of the data and reports ``pad``; as in
MXNet, the next epoch then starts after the records so borrowed. ``round_batch=False`` zero-fills
the last batch and reports the number of filler rows in ``pad``.
"""
from __future__ import annotations

import logging
import queue
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import ndarray as nd
from .. import recordio
from ..base import MXNetError
from ..context import cpu
from ..image.image import _decode, _pick_interp
from ..ops.image.resample import resize as _resize
from . import image_record_fast as _fast
from .base import DataBatch, DataDesc, DataIter

__all__ = ["ImageRecordIter"]

_SUPPORTED = dict(path_imgidx="", path_imglist="", label_width=1, shuffle=False, seed=0, rand_crop=False,
                  rand_mirror=False, mirror=False, resize=-1, inter_method=1, mean_r=0.0, mean_g=0.0,
                  mean_b=0.0, std_r=1.0, std_g=1.0, std_b=1.0, scale=1.0, preprocess_threads=4,
                  prefetch_buffer=4, num_parts=1, part_index=0, round_batch=True, data_name="data",
                  label_name="softmax_label", dtype="float32", verbose=True, seed_aug=None)
# MXNet parameters with their defaults: accepted at the default, refused otherwise
_UNSUPPORTED = dict(max_rotate_angle=0, max_shear_ratio=0.0, rotate=-1, max_random_scale=1.0,
                    min_random_scale=1.0, max_aspect_ratio=0.0, min_aspect_ratio=None, max_img_size=1e10,
                    min_img_size=0.0, random_resized_crop=False, max_random_area=1.0, min_random_area=1.0,
                    max_crop_size=-1, min_crop_size=-1, pad=0, fill_value=255, brightness=0.0, contrast=0.0,
                    saturation=0.0, pca_noise=0.0, random_h=0, random_s=0, random_l=0, rotate_list=None,
                    max_random_contrast=0.0, max_random_illumination=0.0, mean_img="", mean_a=0.0, std_a=1.0,
                    shuffle_chunk_size=0, shuffle_chunk_seed=0, ctx="cpu")
_RAND_MAGIC = 111     # mixed into every seed so seed=0 is not numpy's 0 stream


_M64 = (1 << 64) - 1


class _Draws:
    """One record's random draws (crop offsets, the mirror coin): splitmix64 from a key made of
    (seed, epoch, record position), so a record's draws do not depend on the thread that decodes
    it; seeding a ``random.Random`` (a 624-word Mersenne state) per record cost more than this."""
    __slots__ = ("state",)

    def __init__(self, key: int):
        self.state = key & _M64

    def _next(self) -> int:
        self.state = z = (self.state + 0x9E3779B97F4A7C15) & _M64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        return z ^ (z >> 31)

    def randint(self, a: int, b: int) -> int:
        """Uniform in ``[a, b]`` (the modulo bias of a 64-bit draw is below 2**-50 here)."""
        return a + self._next() % (b - a + 1)

    def random(self) -> float:
        """Uniform in ``[0, 1)``."""
        return (self._next() >> 11) * (1.0 / (1 << 53))


def _check_kwargs(kwargs):
    params = dict(_SUPPORTED)
    for k, v in kwargs.items():
        if k in _SUPPORTED:
            params[k] = v
        elif k in _UNSUPPORTED:
            if v != _UNSUPPORTED[k] and not (k == "ctx" and str(v).startswith("cpu")):
                raise MXNetError(f"ImageRecordIter: parameter {k}={v!r} is not supported by mxref "
                                 f"(only its default {_UNSUPPORTED[k]!r}); supported: {sorted(_SUPPORTED)}")
        else:
            # NOTE: MXNet's parameter parser accepts unknown names silently (its own test_io.py passes
            # a misspelt ``and_mirror``); mxref accepts them too, but says so
            logging.warning("ImageRecordIter: ignoring unknown parameter %r", k)
    if params["dtype"] not in ("float32", np.float32):
        raise MXNetError(f"ImageRecordIter: dtype must be 'float32', got {params['dtype']!r}")
    return params


class ImageRecordIter(DataIter):
    """Iterate over an image ``.rec`` file (see the module docstring for the pipeline and parameters)."""

    def __init__(self, path_imgrec: str, data_shape, batch_size: int, **kwargs):
        p = _check_kwargs(kwargs)
        super().__init__(int(batch_size))
        self.data_shape = tuple(int(x) for x in data_shape)
        if len(self.data_shape) != 3 or self.data_shape[0] not in (1, 3):
            raise MXNetError(f"ImageRecordIter: data_shape must be (C, H, W) with C 1 or 3, got {data_shape}")
        if not 0 <= p["part_index"] < p["num_parts"]:
            raise MXNetError(f"ImageRecordIter: part_index={p['part_index']} is not in "
                             f"[0, num_parts={p['num_parts']})")
        self.p = p
        self._records = self._load_records(path_imgrec, p["path_imgidx"])
        n = len(self._records)
        lo, hi = n * p["part_index"] // p["num_parts"], n * (p["part_index"] + 1) // p["num_parts"]
        self._positions = list(range(lo, hi))
        if not self._positions:
            raise MXNetError(f"ImageRecordIter: part {p['part_index']} of {path_imgrec!r} has no records")
        self._label_map = self._load_label_map(p["path_imglist"]) if p["path_imglist"] else None
        lw, bs = int(p["label_width"]), self.batch_size
        self.provide_data = [DataDesc(p["data_name"], (self.batch_size,) + self.data_shape)]
        self.provide_label = [DataDesc(p["label_name"], (bs, lw) if lw > 1 else (bs,))]
        self._mean = np.array([p["mean_r"], p["mean_g"], p["mean_b"]][:self.data_shape[0]], np.float32)
        std = np.array([p["std_r"], p["std_g"], p["std_b"]], np.float32)
        self._mult = (float(p["scale"]) / std)[:self.data_shape[0]]
        self._pool = ThreadPoolExecutor(max(1, int(p["preprocess_threads"])), "ImageRecordIter-decode")
        self._epoch, self._start, self._queue, self._thread, self._finished = 0, 0, None, None, None
        self._stop = threading.Event()
        self.reset()

    # -- reading -----------------------------------------------------------------------------------
    def _load_records(self, path_imgrec, path_imgidx):
        if path_imgidx:
            self._rec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
            return list(self._rec.keys)
        rec, out = recordio.MXRecordIO(path_imgrec, "r"), []
        while (s := rec.read()) is not None:
            out.append(s)
        rec.close()
        self._rec = None
        return out

    @staticmethod
    def _load_label_map(path):
        labels = {}
        with open(path) as f:
            for line in f:
                parts = line.strip().split("\t")
                if len(parts) >= 3:
                    labels[int(parts[0])] = np.array([float(x) for x in parts[1:-1]], np.float32)
        return labels

    def _raw(self, pos):
        return self._rec.read_idx(self._records[pos]) if self._rec is not None else self._records[pos]

    # -- one record ----------------------------------------------------------------------------------
    def _label(self, header):
        lw = int(self.p["label_width"])
        if lw == 1 and self._label_map is None and header.label.__class__ is float:
            return header.label          # the common case, without a numpy array per record
        if self._label_map is not None:
            lab = self._label_map.get(int(header.id))
            if lab is None:
                raise MXNetError(f"ImageRecordIter: record id {header.id} is not in path_imglist")
        else:
            lab = np.atleast_1d(np.asarray(header.label, np.float32))
        if lab.size != lw:
            raise MXNetError(f"ImageRecordIter: the record provides a {lab.size}-dimensional label but "
                             f"label_width is {lw}")
        return lab

    def process(self, raw: bytes, rng: "_Draws"):
        """One record -> (CxHxW float32 image, label): decode, resize, crop, mirror, normalize."""
        img, label = self._augment(raw, rng)
        return self._normalize(img[None])[0], np.atleast_1d(np.asarray(label, np.float32))

    def _normalize(self, imgs: np.ndarray) -> np.ndarray:
        """NxHxWxC uint8 -> NxCxHxW float32 ``(pixel - mean) * scale / std``, for a whole batch at once."""
        out = (imgs.astype(np.float32) - self._mean) * self._mult
        return np.ascontiguousarray(out.transpose(0, 3, 1, 2))

    def _augment(self, raw: bytes, rng: "_Draws"):
        """One record -> (HxWxC uint8 crop, possibly mirrored, label)."""
        p, (c, h, w) = self.p, self.data_shape
        header, payload = recordio.unpack(raw)
        img = _decode(payload, 1 if c == 3 else 0, True)
        interp = int(p["inter_method"])
        if interp not in (0, 1, 2, 3, 4, 9, 10):
            raise MXNetError(f"ImageRecordIter: invalid inter_method {interp}: valid values 0-4, 9, 10")
        if p["resize"] > 0:
            size, (ih, iw) = int(p["resize"]), img.shape[:2]
            nh, nw = (size * ih // iw, size) if ih > iw else (size, size * iw // ih)
            img = _resize(img, nw, nh, _pick_interp(interp, (ih, iw), (nh, nw)))
        ih, iw = img.shape[:2]
        if ih < h:               # MXNet scales a too-small image up to cover the crop
            nw = int(float(h) / ih * iw)
            img = _resize(img, nw, h, _pick_interp(interp, (ih, iw), (h, nw)))
        ih, iw = img.shape[:2]
        if iw < w:
            nh = int(float(w) / iw * ih)
            img = _resize(img, w, nh, _pick_interp(interp, (ih, iw), (nh, w)))
        ih, iw = img.shape[:2]
        y, x = ih - h, iw - w
        if p["rand_crop"]:
            y, x = rng.randint(0, y), rng.randint(0, x)
        else:
            y, x = y // 2, x // 2
        img = img[y:y + h, x:x + w]
        if p["mirror"] or (p["rand_mirror"] and rng.random() < 0.5):
            img = img[:, ::-1]
        return img, self._label(header)

    def _fill(self, raw: bytes, rng: "_Draws", out: np.ndarray):
        """One record into ``out`` (CxHxW float32) through ``image_record_fast``: decode, then
        resize, crop, mirror and normalize in one C loop (pure mode: its numpy twin, after the
        plain reader); ``_augment`` + ``_normalize`` handle an image needing a second resize."""
        p, (c, h, w) = self.p, self.data_shape
        header, payload = recordio.unpack(raw)
        img = _fast.decode(payload, c)
        interp = int(p["inter_method"])
        if interp not in (0, 1, 2, 3, 4, 9, 10):
            raise MXNetError(f"ImageRecordIter: invalid inter_method {interp}: valid values 0-4, 9, 10")
        size, code = img.shape[:2], None
        if p["resize"] > 0:
            short, (ih, iw) = int(p["resize"]), size
            size = (short * ih // iw, short) if ih > iw else (short, short * iw // ih)
            code = _pick_interp(interp, (ih, iw), size)
        if size[0] < h or size[1] < w:           # scaled up to cover the crop: the reference path
            img, label = self._augment(raw, rng)
            out[...] = self._normalize(img[None])[0]
            return label
        y, x = size[0] - h, size[1] - w
        if p["rand_crop"]:
            y, x = rng.randint(0, y), rng.randint(0, x)
        else:
            y, x = y // 2, x // 2
        mirror = p["mirror"] or (p["rand_mirror"] and rng.random() < 0.5)
        _fast.crop_into(img, size, code, y, x, bool(mirror), self._mean, self._mult, out)
        return self._label(header)

    def _decode_batch(self, picks, bs):
        """``(batch NDArray, its numpy view, labels)`` of a batch's records; ``picks``: (position,
        epoch). The records are written straight into the NDArray's memory (a new array has
        nothing queued on it in the engine), so ``next`` hands it over without a copy."""
        c, h, w = self.data_shape
        batch = nd.empty((bs, c, h, w), ctx=cpu())
        data = batch._data()
        data[len(picks):] = 0
        # the threads take records one at a time from a shared counter, so on a busy machine a
        # thread that is not scheduled holds up at most the record it is in, not a fixed share;
        # each reads its record under the same lock (one file handle), while the others decode
        n, labels = len(picks), [None] * len(picks)
        todo, lock = iter(range(n)), threading.Lock()

        def work():
            while True:
                with lock:
                    k = next(todo, None)
                    if k is None:
                        return
                    pos, epoch = picks[k]
                    raw = self._raw(pos)
                labels[k] = self._fill(raw, self._rng(epoch, pos), data[k])
        helpers = [self._pool.submit(work) for _ in range(min(n, int(self.p["preprocess_threads"])) - 1)]
        work()          # the producing thread decodes too
        for f in helpers:
            f.result()
        return batch, data, labels

    # -- batches -------------------------------------------------------------------------------------
    def _epoch_order(self, epoch):
        order = list(self._positions)
        if self.p["shuffle"]:
            np.random.default_rng((self.p["seed"], _RAND_MAGIC, epoch)).shuffle(order)
        return order

    def _rng(self, epoch, pos):
        seed = self.p["seed"] if self.p["seed_aug"] is None else self.p["seed_aug"]
        return _Draws(((seed * 1_000_003 + _RAND_MAGIC) * 1_000_003 + epoch) * 1_000_003 + pos)

    def _make_batch(self, order, i, epoch):
        """The batch that starts at ``order[i]``: ``(batch, label, pad, next epoch's start)``."""
        bs, n, next_start = self.batch_size, len(self._positions), 0
        picks = [(order[j], epoch) for j in range(i, min(i + bs, n))]
        pad = bs - len(picks)
        if pad and self.p["round_batch"]:
            if pad > n:
                raise MXNetError("ImageRecordIter: number of input images must be bigger than the batch size")
            nxt = self._epoch_order(epoch + 1)
            picks += [(nxt[j], epoch + 1) for j in range(pad)]
            next_start = pad
        batch, data, labels = self._decode_batch(picks, bs)
        label = np.zeros(self.provide_label[0].shape, np.float32)
        if label.ndim == 1:
            label[:len(labels)] = [lab if lab.__class__ is float else lab[0] for lab in labels]
        else:
            for k, lab in enumerate(labels):
                label[k] = lab
        if pad and not self.p["round_batch"]:
            data[bs - pad:] = 0          # filler rows are zeros, not normalized black
        return batch, label, pad, next_start

    def _stop_thread(self):
        if self._thread is not None:
            self._stop.set()             # the producer sees it at its next put, or between batches
            try:
                while True:              # room in the queue: a producer waiting to put wakes now
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            if self._thread is not threading.current_thread():      # (__del__ may run there)
                self._thread.join()
            self._thread = None

    def reset(self):
        """Start the next epoch (reshuffled with ``shuffle``)."""
        self._stop_thread()
        if self._queue is not None:      # not the first epoch: continue after borrowed records
            self._epoch, self._start = self._epoch + 1, self._finished or 0
        self._finished = None
        self._stop = threading.Event()
        self._queue = queue.Queue(max(1, int(self.p["prefetch_buffer"])))
        self._thread = threading.Thread(target=_produce, daemon=True, name="ImageRecordIter",
                                        args=(weakref.ref(self), self._epoch, self._start, self._queue,
                                              self._stop))
        self._thread.start()

    def next(self):
        """The next DataBatch; StopIteration at the end of the epoch."""
        if self._finished is not None:
            raise StopIteration
        data, label, pad = self._queue.get()
        if data is None:                 # the end marker: (None, next epoch's start, error)
            self._finished = label
            if pad is not None:
                raise pad
            raise StopIteration
        return DataBatch([data], [nd.array(label)], pad=pad)

    def close(self):
        """Stop the prefetching thread and the decode pool."""
        self._stop_thread()
        self._pool.shutdown(wait=True)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001,S110 - interpreter shutdown
            pass


def _put(q, item, stop, ref) -> bool:
    """Put ``item`` unless the iterator was stopped or dropped meanwhile (then False)."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            if ref() is None:
                return False
    return False


def _produce(ref, epoch, start, q, stop):
    """Background producer: puts (data, label, pad) batches, then (None, next start, exc).

    It holds the iterator (``ref`` is a weak reference) only while it builds a batch, so an
    iterator dropped without ``close()`` is still collected, and its ``__del__`` stops this thread
    and the decode pool.
    """
    it = None
    try:
        it = ref()
        if it is None:
            return
        order, n, bs = it._epoch_order(epoch), len(it._positions), it.batch_size
        i, next_start, it = start, 0, None
        while i < n and not stop.is_set():
            it = ref()
            if it is None:
                return
            batch, label, pad, nxt = it._make_batch(order, i, epoch)
            it, next_start = None, nxt or next_start
            if not _put(q, (batch, label, pad), stop, ref):
                return
            i += bs
        _put(q, (None, next_start, None), stop, ref)
    except Exception as e:  # noqa: BLE001 - handed to the consumer, raised in next()
        it = None
        _put(q, (None, 0, e), stop, ref)
