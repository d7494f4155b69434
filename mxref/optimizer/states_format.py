"""The data-only optimizer-state file: MXNet's NDArray dict format with a JSON entry for the rest.

``Updater.get_states`` writes, and ``set_states`` reads, one ``mx.nd.save`` dict::

    "__mxref_optimizer_states__" -> uint8 array: UTF-8 JSON (the structure, see below)
    "0", "1", ...                -> the state arrays, referred to from the JSON by name

The JSON is ``{"format": "mxref.optimizer_states", "version": 1, "states": V, "optimizer": O}``
where ``V`` is the ``index -> state`` dict and ``O`` is ``null`` or ``{"name": <registry name>,
"state": <the optimizer's attributes>}``. A value is a JSON scalar (``null``, bool, int, float,
str) or a tagged object: ``{"t": "nd", "key": k}`` (an NDArray), ``{"t": "np", "key": k}`` (a numpy
array), ``{"t": "scalar", "dtype": d, "v": x}`` (a numpy scalar), ``{"t": "tuple"|"list", "v": [...]}``,
``{"t": "dict", "id": n, "items": [[k, v], ...]}``, ``{"t": "ref", "id": n}`` (the same dict again:
an optimizer's ``_index_update_count`` is one of its ``_all_index_update_counts``) and
``{"t": "obj", "class": c, "state": {...}}`` for a learning-rate scheduler.

Reading builds only these values: optimizers by their registry name and schedulers among the
``LRScheduler`` subclasses already imported, without calling their constructors; nothing is
imported or executed on the file's say-so. MXNet's ``.states`` files (and mxref's before this
format) are pickles, which run code while loading: they are read only with ``allow_pickle=True``
or ``MXREF_ALLOW_PICKLE=1`` (see ``docs/security.md``). MXNet's pickles name ``mxnet.*`` classes;
those are mapped to mxref's (NDArray, registered optimizers, schedulers), so MXNet 1.9.1's
``.states`` files load without MXNet installed.
"""
from __future__ import annotations

import io
import json
import pickle
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError, env_bool
from ..ndarray.io import load_raw
from .optimizer import Optimizer

__all__ = ["dumps", "loads", "is_states_file", "HEADER_KEY"]

HEADER_KEY = "__mxref_optimizer_states__"
FORMAT, VERSION = "mxref.optimizer_states", 1
_NDARRAY_FILE_MAGIC = (0x112).to_bytes(8, "little")


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------

class _Encoder:
    def __init__(self):
        self.arrays: Dict[str, nd.NDArray] = {}
        self.seen: Dict[int, Any] = {}     # id(obj) -> ("dict", n) or ("nd", key)
        self.keep = []                     # holds encoded objects so their ids stay unique

    def _array(self, arr: nd.NDArray) -> str:
        if id(arr) not in self.seen:
            key = str(len(self.arrays))
            self.arrays[key] = arr
            self.seen[id(arr)] = key
            self.keep.append(arr)
        return self.seen[id(arr)]

    def encode(self, value, where: str):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, nd.NDArray):
            return {"t": "nd", "key": self._array(value)}
        if isinstance(value, np.ndarray):
            return {"t": "np", "key": self._array(nd.array(value, dtype=value.dtype))}
        if isinstance(value, np.generic):
            return {"t": "scalar", "dtype": value.dtype.str, "v": value.item()}
        if isinstance(value, (tuple, list)):
            return {"t": type(value).__name__,
                    "v": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, dict):
            if id(value) in self.seen:
                return {"t": "ref", "id": self.seen[id(value)]}
            n = self.seen[id(value)] = len(self.seen)
            self.keep.append(value)
            return {"t": "dict", "id": n,
                    "items": [[self.encode(k, where), self.encode(v, f"{where}[{k!r}]")]
                              for k, v in value.items()]}
        scheduler = _scheduler_class_name(type(value))
        if scheduler is not None:
            return {"t": "obj", "class": scheduler, "state": self.encode(dict(vars(value)), where)}
        raise MXNetError(f"save optimizer states: {where} is a {type(value).__name__}, which the "
                         "data-only state format cannot hold (it keeps arrays, numbers, strings, "
                         "tuples, lists, dicts and learning-rate schedulers)")


def _scheduler_class_name(klass: type) -> Optional[str]:
    for sub in _schedulers():
        if sub is klass:
            return f"{klass.__module__}.{klass.__qualname__}"
    return None


def _schedulers():
    """``LRScheduler`` and every subclass imported so far (no import happens here)."""
    from .. import lr_scheduler  # noqa: PLC0415 - same floor; imported lazily to keep import light
    todo, found = [lr_scheduler.LRScheduler], []
    while todo:
        klass = todo.pop()
        found.append(klass)
        todo.extend(klass.__subclasses__())
    return found


def _registry_name(optimizer: Optimizer) -> str:
    for name, klass in Optimizer.opt_registry.items():
        if klass is type(optimizer):
            return name
    raise MXNetError(f"save optimizer states: {type(optimizer).__name__} is not a registered "
                     "optimizer (use @mx.optimizer.register), so it cannot be saved by name")


def dumps(states: Dict[Any, Any], optimizer: Optional[Optimizer] = None) -> bytes:
    """The data-only file holding ``states`` (and ``optimizer``'s attributes, when given)."""
    enc = _Encoder()
    doc = {"format": FORMAT, "version": VERSION, "states": enc.encode(states, "states"),
           "optimizer": None}
    if optimizer is not None:
        doc["optimizer"] = {"name": _registry_name(optimizer),
                            "state": enc.encode(optimizer.__getstate__(), "optimizer")}
    header = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    payload = {HEADER_KEY: nd.array(np.frombuffer(header, np.uint8), dtype=np.uint8)}
    payload.update(enc.arrays)
    return nd.save_tobuffer(payload)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

class _Decoder:
    def __init__(self, arrays: Dict[str, nd.NDArray], source: str):
        self.arrays = arrays
        self.source = source
        self.dicts: Dict[int, dict] = {}

    def bad(self, problem: str) -> MXNetError:
        return MXNetError(f"Invalid optimizer-state file {self.source}: {problem}")

    def decode(self, value, depth: int = 0):
        if depth > 100:
            raise self.bad("values nested more than 100 deep")
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if not isinstance(value, dict) or not isinstance(value.get("t"), str):
            raise self.bad(f"unexpected value {value!r:.80}")
        tag = value["t"]
        if tag in ("nd", "np"):
            arr = self.arrays.get(value.get("key"))
            if arr is None:
                raise self.bad(f"refers to array {value.get('key')!r:.40}, which the file lacks")
            return arr if tag == "nd" else arr.asnumpy()
        if tag == "scalar":
            try:
                dtype = np.dtype(value["dtype"])
                if dtype.kind not in "biuf":   # e.g. 'V<n>' would allocate n bytes
                    raise ValueError(f"dtype {dtype} is not a number type")
                return dtype.type(value["v"])
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise self.bad(f"bad numpy scalar {value!r:.80} ({exc})") from None
        if tag in ("tuple", "list"):
            items = value.get("v")
            if not isinstance(items, list):
                raise self.bad(f"a {tag} without a list of values")
            out = [self.decode(v, depth + 1) for v in items]
            return tuple(out) if tag == "tuple" else out
        if tag == "dict":
            n, items = value.get("id"), value.get("items")
            if not isinstance(n, int) or n in self.dicts or not isinstance(items, list):
                raise self.bad(f"bad dict entry (id {n!r:.20})")
            out = self.dicts[n] = {}
            for pair in items:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.bad(f"a dict item must be [key, value], got {pair!r:.80}")
                key = self.decode(pair[0], depth + 1)
                try:
                    out[key] = self.decode(pair[1], depth + 1)
                except TypeError:
                    raise self.bad(f"unhashable dict key {pair[0]!r:.80}") from None
            return out
        if tag == "ref":
            if value.get("id") not in self.dicts:
                raise self.bad(f"refers to dict {value.get('id')!r:.20}, not defined before it")
            return self.dicts[value["id"]]
        if tag == "obj":
            name = value.get("class")
            klass = next((k for k in _schedulers() if f"{k.__module__}.{k.__qualname__}" == name), None)
            if klass is None:
                raise self.bad(f"object of class {name!r:.80}, which is not an imported LRScheduler")
            state = self.decode(value.get("state"), depth + 1)
            if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
                raise self.bad(f"{name} state must be a dict of attribute names")
            obj = klass.__new__(klass)
            obj.__dict__.update(state)
            return obj
        raise self.bad(f"unknown value tag {tag!r:.40}")


# ---------------------------------------------------------------------------------------------
# Pickles, with the opt-in: mxref's older files load as they are; MXNet's name ``mxnet.*`` classes,
# which are mapped to mxref's (NDArrays arrive as MXNet's raw array bytes).
# ---------------------------------------------------------------------------------------------

class _MXNetNDArray:
    """Stands in for ``mxnet.ndarray.ndarray.NDArray`` while an MXNet pickle loads: MXNet's
    ``__getstate__`` stores ``{'handle': raw array bytes}``; ``_from_mxnet`` makes the NDArray."""

    def __init__(self, handle=None):
        self.raw = None

    def __setstate__(self, state):
        self.raw = state.get("handle") if isinstance(state, dict) else None


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module.split(".")[0] != "mxnet":
            return super().find_class(module, name)
        if (module, name) == ("mxnet.ndarray.ndarray", "NDArray"):
            return _MXNetNDArray
        if module.startswith("mxnet.optimizer") and name.lower() in Optimizer.opt_registry:
            return Optimizer.opt_registry[name.lower()]
        if module == "mxnet.lr_scheduler":
            klass = next((k for k in _schedulers() if k.__name__ == name), None)
            if klass is not None:
                return klass
        raise pickle.UnpicklingError(f"{module}.{name} has no mxref counterpart")


def _from_mxnet(value, source: str, done: set):
    """``value`` with MXNet's stand-ins replaced: arrays decoded, MXNet optimizers completed."""
    if isinstance(value, _MXNetNDArray):
        return None if value.raw is None else load_raw(bytes(value.raw), source)
    if id(value) in done:
        return value
    if isinstance(value, dict):
        done.add(id(value))
        for k in list(value):
            value[k] = _from_mxnet(value[k], source, done)
    elif isinstance(value, list):
        done.add(id(value))
        value[:] = [_from_mxnet(v, source, done) for v in value]
    elif isinstance(value, tuple):
        return tuple(_from_mxnet(v, source, done) for v in value)
    elif isinstance(value, Optimizer):
        done.add(id(value))
        # An MXNet optimizer carries MXNet's attributes; any that mxref's class also needs come
        # from a default instance (an mxref pickle has them all already).
        for k, v in vars(type(value)()).items():
            value.__dict__.setdefault(k, v)
        value.param_dict = {}
    return value


def _unpickle(blob: bytes, source: str):
    try:
        loaded = _Unpickler(io.BytesIO(blob)).load()
    except MXNetError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of a (trusted) pickle, reported by file
        raise MXNetError(f"{source}: cannot unpickle the optimizer states: "
                         f"{type(exc).__name__}: {exc}") from None
    return _from_mxnet(loaded, source, set())


def is_states_file(blob: bytes) -> bool:
    """Whether ``blob`` starts like the data-only format (an NDArray file; pickles never do)."""
    return bytes(blob[:8]) == _NDARRAY_FILE_MAGIC


def pickle_allowed(allow_pickle: Optional[bool]) -> bool:
    """``allow_pickle`` when given, else ``MXREF_ALLOW_PICKLE`` (off by default)."""
    return env_bool("MXREF_ALLOW_PICKLE", False) if allow_pickle is None else bool(allow_pickle)


def loads(blob: bytes, source: str = "optimizer states", allow_pickle: Optional[bool] = None
          ) -> Tuple[Dict[Any, Any], Optional[Optimizer]]:
    """``(states, optimizer or None)`` from a data-only file or, with the opt-in, a pickle.

    .. warning:: ``allow_pickle=True`` (or ``MXREF_ALLOW_PICKLE=1``) unpickles a file that is not
       in the data-only format, as MXNet's ``.states`` files are; unpickling runs any code the
       file names. Use it only for files you trust.
    """
    if not is_states_file(blob):
        if not pickle_allowed(allow_pickle):
            raise MXNetError(
                f"{source} is not a data-only optimizer-state file; it may be a pickled one "
                "(MXNet's .states format, or mxref's before the data-only format). Unpickling can "
                "run arbitrary code, so it is refused by default. If you trust the file, pass "
                "allow_pickle=True or set MXREF_ALLOW_PICKLE=1 (see docs/security.md).")
        loaded = _unpickle(blob, source)
        if isinstance(loaded, tuple) and len(loaded) == 2:
            return loaded
        return loaded, None
    arrays = nd.load_frombuffer(blob, source)
    dec = _Decoder(arrays if isinstance(arrays, dict) else {}, source)
    if not isinstance(arrays, dict) or HEADER_KEY not in arrays:
        raise dec.bad(f"an NDArray file without the '{HEADER_KEY}' entry (not optimizer states)")
    try:
        doc = json.loads(arrays[HEADER_KEY].asnumpy().tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise dec.bad(f"the header is not UTF-8 JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise dec.bad("the header does not name the optimizer-state format")
    if doc.get("version") != VERSION:
        raise dec.bad(f"format version {doc.get('version')!r:.20}; this mxref reads version {VERSION}")
    states = dec.decode(doc.get("states"))
    if not isinstance(states, dict):
        raise dec.bad("'states' must be a dict")
    optimizer = None
    if doc.get("optimizer") is not None:
        spec = doc["optimizer"]
        name = spec.get("name") if isinstance(spec, dict) else None
        klass = Optimizer.opt_registry.get(name) if isinstance(name, str) else None
        if klass is None:
            raise dec.bad(f"optimizer {name!r:.80} is not registered")
        attrs = dec.decode(spec.get("state"))
        if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
            raise dec.bad("the optimizer's state must be a dict of attribute names")
        optimizer = klass.__new__(klass)
        optimizer.__setstate__(attrs)
        _check_optimizer(optimizer, dec)
    return states, optimizer


def _check_optimizer(optimizer: Optimizer, dec: _Decoder) -> None:
    """The loaded attributes have the kinds a default instance has (a number stays a number, a
    table a dict); ones the file lacks come from that instance. A file cannot plant a string
    where the update arithmetic expects a learning rate."""
    try:
        default = vars(type(optimizer)())
    except Exception:  # noqa: BLE001 - an optimizer that needs constructor arguments: no template
        return
    for name, want in default.items():
        if name not in optimizer.__dict__:
            optimizer.__dict__[name] = want
            continue
        got = optimizer.__dict__[name]
        if isinstance(want, bool):
            ok = isinstance(got, (bool, np.bool_))
        elif isinstance(want, (int, float)):
            ok = got is None or (isinstance(got, (int, float, np.number)) and not isinstance(got, bool))
        elif isinstance(want, dict):
            ok = isinstance(got, dict)
        elif isinstance(want, (tuple, list)):
            ok = isinstance(got, (tuple, list))
        elif name == "lr_scheduler":
            ok = got is None or any(isinstance(got, k) for k in _schedulers())
        else:
            ok = True
        if not ok:
            raise dec.bad(f"optimizer attribute '{name}' is a {type(got).__name__}, expected the kind "
                          f"of {type(want).__name__} {type(optimizer).__name__} keeps there")
