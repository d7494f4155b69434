"""Gluon helpers: ``split_and_load`` across devices, ``clip_global_norm``, ``check_sha1``, ``download``."""
from __future__ import annotations

import hashlib
import os
import ssl
import urllib.request
import warnings
from typing import List, Sequence

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1"]


def split_data(data: NDArray, num_slice: int, batch_axis: int = 0, even_split: bool = True) -> List[NDArray]:
    """``data`` cut into ``num_slice`` pieces along ``batch_axis`` (the first pieces one longer when
    uneven and ``even_split=False``)."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(f"data with shape {data.shape} cannot be evenly split into {num_slice} slices "
                         f"along axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
                         "even_split=False to allow uneven partitioning of data.")
    each, extras = divmod(size, num_slice)
    points = np.cumsum([0] + [each + 1] * extras + [each] * (num_slice - extras))
    if batch_axis != 0:
        return [nd.slice_axis(data, axis=batch_axis, begin=int(points[i]), end=int(points[i + 1]))
                for i in range(num_slice)]
    return [data[int(points[i]):int(points[i + 1])] for i in range(num_slice)]


def split_and_load(data, ctx_list: Sequence, batch_axis: int = 0, even_split: bool = True) -> List[NDArray]:
    """Split ``data`` along ``batch_axis`` and copy piece ``i`` to ``ctx_list[i]``."""
    if not isinstance(data, NDArray):
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(c) for s, c in zip(slices, ctx_list)]


def clip_global_norm(arrays: Sequence[NDArray], max_norm: float, check_isfinite: bool = True):
    """Scale ``arrays`` in place so that their joint 2-norm is at most ``max_norm``.

    Returns the norm before clipping (a float; an NDArray, without waiting, when
    ``check_isfinite=False``).
    """
    if not arrays:
        raise ValueError("clip_global_norm: arrays is empty")
    ctx = arrays[0].context
    squares = []
    for a in arrays:
        if a.stype == "default":
            x = a.reshape((-1,))
            squares.append(nd.dot(x, x).as_in_context(ctx))
        else:       # a sparse array has no flat view: its norm reads the stored values only
            squares.append(nd.square(a.norm()).reshape((1,)).as_in_context(ctx))
    total_norm = nd.sqrt(nd.add_n(*squares))
    if check_isfinite and not np.isfinite(total_norm.asscalar()):
        warnings.warn("nan or inf is detected. Clipping results will be undefined.", UserWarning,
                      stacklevel=2)
    scale = max_norm / (total_norm + 1e-8)
    scale = nd.min(nd.concat(scale, nd.ones((1,), ctx=ctx), dim=0))
    for a in arrays:
        a *= scale.as_in_context(a.context)
    return total_norm.asscalar() if check_isfinite else total_norm


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the SHA-1 digest of the file's contents equals ``sha1_hash``."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def download(url: str, path: str = None, overwrite: bool = False, sha1_hash: str = None,
             retries: int = 5, verify_ssl: bool = True) -> str:
    """Fetch ``url`` to ``path`` (a file, or a folder to put it in; default: the URL's file name
    in the working directory) and return the file name. An existing file is kept unless
    ``overwrite`` or its SHA-1 differs from ``sha1_hash``. Without a network this raises
    ``MXNetError`` naming the URL and the target, after ``retries`` tries.
    """
    fname = url.split("/")[-1]
    if path is not None:
        path = os.path.expanduser(path)
        fname = os.path.join(path, fname) if os.path.isdir(path) else path
    if retries < 1:
        raise MXNetError(f"download: retries must be >= 1, got {retries}")
    if os.path.exists(fname) and not overwrite and (sha1_hash is None or check_sha1(fname, sha1_hash)):
        return fname
    os.makedirs(os.path.dirname(os.path.abspath(fname)), exist_ok=True)
    context = None if verify_ssl else ssl._create_unverified_context()
    last = None
    for _ in range(retries):
        try:
            with urllib.request.urlopen(url, context=context, timeout=30) as resp:
                data = resp.read()
        except OSError as err:                     # URLError, refused, DNS failure, timeout
            last = err
            continue
        tmp = f"{fname}.part"                      # never leave a half-written file under fname
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, fname)
        if sha1_hash and not check_sha1(fname, sha1_hash):
            raise MXNetError(f"download: {fname} from {url} does not match the expected SHA-1 "
                             f"{sha1_hash}; the file may be corrupted or outdated")
        return fname
    raise MXNetError(f"download: cannot fetch {url} to {fname} after {retries} tries "
                     f"(no network?): {last}")
