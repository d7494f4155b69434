"""The KVStore base class: the public API, key handling, checks, updaters and the registry of types.

A key-value store holds one array per key. ``push`` sends values (a list of values for one key
is one value per device, and is summed), ``pull`` copies the stored value out (a list of outputs
is a broadcast). With an updater, a push calls ``updater(key, summed, stored)`` once; without one
the sum replaces the stored value (``mxnet-semantics.md`` item 15).

This class does everything that does not depend on where the data goes: normalising keys and
values, type and shape checks (at call time, naming the key), the updater, optimizer states and
the type registry. A store type fills in ``_init_impl``, ``_push_impl`` and ``_pull_impl`` and
registers itself, so a new type is one file::

    @KVStore.register
    class MyStore(LocalKVStore):
        registry_names = ("my_store",)

Every data movement is an engine operation (``push_op``) with the caller's ``priority`` and
``CPU_PRIORITIZED`` property, so a push returns at once and its reduce overlaps computation.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import engine as _engine
from .. import optimizer as _opt
from ..base import MXNetError
from ..context import Context
from ..engine.base import FnProperty
from ..ndarray import NDArray
from .compression import GradientCompression

__all__ = ["KVStore", "KVStoreBase", "create", "push_op", "copy_into", "is_host", "is_capable"]

_HOST = ("cpu", "cpu_pinned", "cpu_shared")


def is_host(ctx: Context) -> bool:
    """Whether ``ctx``'s memory is host memory (numpy can read any two such arrays together)."""
    return ctx.device_type in _HOST


def push_op(fn: Callable, ctx: Context, reads: Sequence[NDArray], writes: Sequence[NDArray],
            priority: int, name: str) -> None:
    """Push ``fn(run_ctx)`` reading ``reads`` and writing ``writes`` as a prioritized engine op.

    Host work goes to the CPU priority queue, GPU work to the device's priority queue; within a
    queue a higher ``priority`` runs first (Module and Trainer pass ``-param_index``, so the first
    layers' weights, needed first by the next forward pass, come back first).
    """
    prop = FnProperty.CPU_PRIORITIZED if is_host(ctx) else FnProperty.GPU_PRIORITIZED
    _engine.get().push_sync(fn, ctx, [a._chunk.var for a in reads], [a._chunk.var for a in writes],
                            prop, priority, name)


def copy_into(src: NDArray, dst: NDArray, priority: int, name: str = "KVStoreCopy") -> None:
    """Copy ``src`` into ``dst`` (same shape and dtype) as a prioritized engine op.

    NOTE: host-to-host copies are plain numpy assignments here; any copy touching a device goes
    through ``NDArray.copyto``, the device backend's own copy (which does not carry the priority).
    """
    if src is dst or (src._chunk is dst._chunk and src._offset == dst._offset):
        return
    if _is_rsp(dst) or _is_rsp(src):
        src.copyto(dst)      # a storage cast (cast_storage), itself an engine operation
        return
    if is_host(src.context) and is_host(dst.context):
        def copy(run_ctx):
            dst._data()[...] = src._data()
        push_op(copy, dst.context, (src,), (dst,), priority, name)
    else:
        src.copyto(dst)


class KVStore:
    """A key-value store over devices (``mx.kv.KVStore``); make one with ``mx.kv.create(name)``.

    Keys are ints or strs (one kind per store). Values are NDArrays; everything is asynchronous
    except the checks, which raise ``MXNetError`` at the call.

    Examples
    --------
    >>> kv = mx.kv.create('local')
    >>> kv.init(3, mx.nd.ones((2, 3)))
    >>> kv.push(3, [mx.nd.ones((2, 3), ctx=mx.cpu(i)) for i in range(2)])   # summed: 2
    >>> out = [mx.nd.zeros((2, 3), ctx=mx.cpu(i)) for i in range(2)]
    >>> kv.pull(3, out=out)                                               # broadcast
    >>> out[1].asnumpy()[0]
    array([2., 2., 2.], dtype=float32)
    """

    OPTIMIZER = "optimizer"
    #: Every capability a store may have (``is_capable`` refuses other names). MXNet knows only
    #: ``optimizer``; the others let training code ask instead of parsing type names.
    CAPABILITIES = {
        "optimizer": "the store can run an optimizer on push (update_on_kvstore=True)",
        "distributed": "workers in several processes share the store (it cannot be reset)",
        "synchronous": "every update is the sum of one push from every worker (a step's batch is "
                       "num_workers times a worker's batch)",
        "async": "pushes are applied one by one as they arrive, so the optimizer must run on the "
                 "store (update_on_kvstore=True)",
        "init_broadcast": "init replaces every worker's value by rank 0's and the workers update "
                          "locally, so a worker pulls once after init to start from that value",
    }
    #: The capabilities of this store type (a subclass or an instance may narrow or extend it).
    capabilities: frozenset = frozenset({"optimizer"})
    kv_registry: Dict[str, type] = {}
    registry_names: Tuple[str, ...] = ()

    def __init__(self, name: str):
        self._type = name
        self._updater: Optional[Callable] = None
        self._compression: Optional[GradientCompression] = None
        self._key_type: Optional[type] = None   # int or str, fixed by the first key used
        self._key_rank: Dict = {}               # key -> sort rank (str keys: order of first init)
        self._meta: Dict = {}                   # key -> (shape, dtype) given at init
        self._rsp: Dict = {}                    # row_sparse key -> the store type's state of it

    # -- the registry ------------------------------------------------------------------------
    @classmethod
    def register(cls, klass: type) -> type:
        """Class decorator: register a store type under ``klass.registry_names`` (default: the
        lower-cased class name), so ``mx.kv.create(name)`` finds it."""
        if not (isinstance(klass, type) and issubclass(klass, KVStore)):
            raise MXNetError(f"KVStore.register: expected a KVStore subclass, got {klass!r}")
        for name in klass.registry_names or (klass.__name__.lower(),):
            KVStore.kv_registry[name.lower()] = klass
        return klass

    @staticmethod
    def create(name: str = "local") -> "KVStore":
        """Same as ``mx.kv.create``."""
        return create(name)

    # -- properties --------------------------------------------------------------------------
    @property
    def type(self) -> str:
        """The type name given to ``create`` (lower-cased)."""
        return self._type

    @property
    def rank(self) -> int:
        """This worker's rank in ``[0, num_workers)``; 0 for single-process types."""
        return 0

    @property
    def num_workers(self) -> int:
        """Number of worker processes; 1 for single-process types."""
        return 1

    def is_capable(self, capability: str) -> bool:
        """Whether the store has ``capability``, one of ``KVStore.CAPABILITIES`` (case-insensitive).

        Training code asks this instead of parsing type names: ``Module`` and ``gluon.Trainer``
        choose ``update_on_kvstore`` with ``'optimizer'`` and ``'async'``, scale the gradient by
        ``'synchronous'`` and refuse to reset a ``'distributed'`` store.

        >>> mx.kv.create('local').is_capable('optimizer')
        True
        """
        name = capability.lower()
        if name not in KVStore.CAPABILITIES:
            raise MXNetError(f"Unknown capability: {capability} (known: {', '.join(KVStore.CAPABILITIES)})")
        return name in self.capabilities

    # -- keys and values ---------------------------------------------------------------------
    def _check_key_types(self, keys: List) -> None:
        kinds = {type(k) for k in keys}
        if len(kinds) > 1:
            raise MXNetError(f"kvstore: inconsistent types of keys detected in {keys} (use all int "
                             "or all str keys)")
        kind = kinds.pop() if kinds else None
        if kind is None:
            return
        if self._key_type is None:
            self._key_type = kind
        elif self._key_type is not kind:
            raise MXNetError(f"kvstore: Mixed key types are not allowed: this store uses "
                             f"{self._key_type.__name__} keys, got {kind.__name__} key {keys[0]!r}")

    def _group(self, key, value, what: str, init: bool = False) -> List[Tuple[object, List]]:
        """``(key, [arrays])`` pairs in MXNet's key order; repeated keys gather their values."""
        if isinstance(key, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(key):
                got = len(value) if isinstance(value, (list, tuple)) else type(value).__name__
                raise MXNetError(f"kvstore.{what}: {len(key)} keys need a list of {len(key)} values, "
                                 f"got {got}")
            pairs = [(_norm_key(k, what), v) for k, v in zip(key, value)]
        else:
            pairs = [(_norm_key(key, what), value)]
        self._check_key_types([k for k, _ in pairs])
        groups: Dict = {}
        for k, v in pairs:
            arrays = list(v) if isinstance(v, (list, tuple)) else [v]
            for a in arrays:
                if not isinstance(a, NDArray):
                    raise MXNetError(f"kvstore.{what}: values of key {k!r} must be NDArrays, got "
                                     f"{type(a).__name__}")
            groups.setdefault(k, []).extend(arrays)
        if init:
            for k in groups:
                if isinstance(k, str) and k not in self._key_rank:
                    self._key_rank[k] = len(self._key_rank)
        else:
            for k in groups:
                if k not in self._meta:
                    raise MXNetError(f"kvstore.{what}: key {k!r} has not been inited")
        # NOTE: MXNet sorts the keys of one call (str keys by the order they were first inited),
        # so updaters see keys in that order whatever order the call listed them in.
        return sorted(groups.items(), key=lambda kv: self._rank(kv[0]))

    def _rank(self, key):
        return self._key_rank.get(key, 0) if isinstance(key, str) else key

    def _check_arrays(self, key, arrays: List[NDArray], what: str) -> None:
        shape, dtype = self._meta[key]
        for a in arrays:
            if a.shape != shape:
                raise MXNetError(f"kvstore.{what}: key {key!r} holds shape {shape}, got an array of "
                                 f"shape {a.shape} on {a.context}")
            if a._dtype != dtype:
                raise MXNetError(f"kvstore.{what}: key {key!r} holds dtype {dtype.name}, got an "
                                 f"array of dtype {a._dtype.name} on {a.context}")

    # -- the API -----------------------------------------------------------------------------
    def init(self, key, value) -> None:
        """Initialise one key or a list of keys; the value is copied. Each key exactly once."""
        groups = self._group(key, value, "init", init=True)
        for k, arrays in groups:
            if k in self._meta or len(arrays) > 1:
                raise MXNetError(f"kvstore.init: duplicate init of key {k!r}. Please double check "
                                 "if you called kv.init or kv.broadcast with this key multiple times")
        for k, (a,) in groups:
            self._meta[k] = (a.shape, a._dtype)
            if _is_rsp(a):
                if len(a.shape) < 1:
                    raise MXNetError(f"kvstore.init: row_sparse key {k!r} needs at least one axis")
                self._rsp_init(k, a)
            else:
                self._init_impl(k, a)

    def push(self, key, value, priority: int = 0) -> None:
        """Push values; a list of values for one key (one per device) is summed first.

        Returns at once: the reduce (and the update, with an updater) run as engine operations.
        Without an updater the sum replaces the stored value; with one, ``updater(key, sum,
        stored)`` is called once per key.
        """
        groups = self._group(key, value, "push")
        for k, arrays in groups:
            if not arrays:
                raise MXNetError(f"kvstore.push: no values given for key {k!r}")
            self._check_arrays(k, arrays, "push")
            if k in self._rsp and not all(_is_rsp(a) for a in arrays):
                raise MXNetError(f"kvstore.push: key {k!r} is row_sparse (initialised with a "
                                 "RowSparseNDArray); push row_sparse values to it, got "
                                 f"{', '.join(sorted({getattr(a, 'stype', 'default') for a in arrays}))}")
        dense = [(k, arrays) for k, arrays in groups if k not in self._rsp]
        self._before_push(dense)
        for k, arrays in groups:
            if k in self._rsp:
                self._rsp_push(k, arrays, priority)
        if dense:
            self._push_dense(dense, priority)

    def pull(self, key, out=None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the stored values into ``out``; a list of outputs for one key is a broadcast.

        The copies run after every push already issued on the key (engine ordering), so the
        outputs see the latest value once read. With ``ignore_sparse`` (the default, as in MXNet)
        row_sparse outputs are left alone (use ``row_sparse_pull``); with ``ignore_sparse=False``
        they get the whole value, cast to row_sparse. A row_sparse key's whole value goes into
        dense outputs either way.
        """
        if out is None:
            raise MXNetError("kvstore.pull: out= is required (an NDArray or a list of them)")
        groups = self._group(key, out, "pull")
        for k, arrays in groups:
            self._check_arrays(k, arrays, "pull")
        dense = []
        for k, arrays in groups:
            if ignore_sparse:
                arrays = [a for a in arrays if not _is_rsp(a)]
            if k in self._rsp:
                for a in arrays:
                    self._rsp_pull(k, a, None, priority)
            elif arrays:
                dense.append((k, arrays))
        if dense:
            self._pull_dense(dense, priority)

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """``push(key, value)`` then ``pull(key, out)``; without ``out`` the values are overwritten."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """``init(key, value)`` then ``pull(key, out)``: every output gets ``value``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority: int = 0, row_ids=None) -> None:
        """Pull only the rows ``row_ids`` of a row_sparse key into row_sparse ``out``.

        ``row_ids`` is an NDArray of ids, of any shape (one for all, one per key, or one per
        output); ids may repeat and be unsorted. Each
        output then holds every requested row once, in sorted order, rows never pushed as
        zeros (as MXNet). Only those rows travel: on a ``dist`` store the ids go to the servers
        that hold them and just their rows come back.
        """
        if out is None or row_ids is None:
            raise MXNetError("kvstore.row_sparse_pull: out= and row_ids= are required")
        groups = self._group(key, out, "row_sparse_pull")
        flat_ids = list(row_ids) if isinstance(row_ids, (list, tuple)) else [row_ids]
        if len(flat_ids) == len(groups) and any(isinstance(i, (list, tuple)) for i in flat_ids):
            # one entry per key: a list (one per output) or one array for all the key's outputs
            flat_ids = [ids for item, (_, arrays) in zip(flat_ids, groups)
                        for ids in (list(item) if isinstance(item, (list, tuple)) else [item] * len(arrays))]
        outs = [a for _, arrays in groups for a in arrays]
        if len(flat_ids) == 1:
            flat_ids = flat_ids * len(outs)
        elif len(flat_ids) == len(groups) != len(outs):     # one row_ids per key, for all its outputs
            flat_ids = [ids for ids, (_, arrays) in zip(flat_ids, groups) for _ in arrays]
        if len(flat_ids) != len(outs):
            raise MXNetError(f"kvstore.row_sparse_pull: {len(flat_ids)} row_ids for {len(outs)} outputs")
        for k, arrays in groups:
            self._check_arrays(k, arrays, "row_sparse_pull")
            if k not in self._rsp:
                raise MXNetError(f"kvstore.row_sparse_pull: key {k!r} is not row_sparse (it was "
                                 "initialised with a dense array); use pull, or init the key with "
                                 "a RowSparseNDArray")
            for a in arrays:
                if not _is_rsp(a):
                    raise MXNetError(f"kvstore.row_sparse_pull: key {k!r}: out must be row_sparse, "
                                     f"got an array of storage type {getattr(a, 'stype', 'default')!r}")
        for ids in flat_ids:
            if not isinstance(ids, NDArray) or ids.ndim == 0:
                raise MXNetError("kvstore.row_sparse_pull: row_ids must be NDArrays of row ids, got "
                                 f"{getattr(ids, 'shape', type(ids).__name__)}")
        flat_ids = [ids if ids.ndim == 1 else ids.reshape((-1,)) for ids in flat_ids]   # as MXNet
        pairs = iter(flat_ids)
        for k, arrays in groups:
            for a in arrays:
                self._rsp_pull(k, a, next(pairs), priority)

    # -- updaters and optimizer states -------------------------------------------------------
    def set_optimizer(self, optimizer) -> None:
        """Update on push with ``optimizer`` (a local ``Updater`` keeping per-key state)."""
        self._set_updater(_opt.get_updater(optimizer))

    def _set_updater(self, updater: Callable) -> None:
        """Call ``updater(key, merged, stored)`` on every push instead of replacing the value.

        NOTE: str keys reach the updater as ``str`` (MXNet 1.9.1 passes ``bytes``; its
        ``Updater`` decodes them, and so does ours).
        """
        if not callable(updater):
            raise MXNetError(f"kvstore: the updater must be callable, got {type(updater).__name__}")
        self._updater = updater

    set_updater = _set_updater

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the updater's states (and the optimizer, with ``dump_optimizer``) to ``fname``."""
        with open(fname, "wb") as fout:
            fout.write(self._states_updater("save").get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str, allow_pickle: Optional[bool] = None) -> None:
        """Load states written by ``save_optimizer_states`` (a data-only file).

        ``allow_pickle=True`` (or ``MXREF_ALLOW_PICKLE=1``) also reads pickled ``.states`` files
        such as MXNet's. Warning: unpickling runs any code the file names; trusted files only.
        """
        with open(fname, "rb") as fin:
            self._states_updater("load").set_states(fin.read(), allow_pickle=allow_pickle, source=fname)

    def _states_updater(self, what: str):
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise MXNetError(f"kvstore.{what}_optimizer_states: no optimizer is set on this store "
                             "(call set_optimizer first)")
        return self._updater

    # -- compression, barriers, commands -----------------------------------------------------
    def set_gradient_compression(self, compression_params: dict) -> None:
        """Compress pushes, e.g. ``{'type': '2bit', 'threshold': 0.5}`` (``device``/``dist`` only)."""
        if "device" not in self.type and "dist" not in self.type:
            raise MXNetError("Gradient compression is not supported for this type of kvstore "
                             f"({self.type!r}; use 'device' or a 'dist' type)")
        self._compression = GradientCompression.parse(compression_params)

    def _barrier(self) -> None:
        """Wait until every worker reaches the barrier; a no-op with a single worker."""

    barrier = _barrier

    def _send_command_to_servers(self, head: int, body: str) -> None:
        """Send a command to the servers; single-process types have none."""

    # -- what a store type implements ---------------------------------------------------------
    def _init_impl(self, key, value: NDArray) -> None:
        raise NotImplementedError

    def _before_push(self, groups: List[Tuple[object, List[NDArray]]]) -> None:
        """Called once per push call with every key's values (``device`` places buffers here)."""

    def _push_impl(self, key, values: List[NDArray], priority: int) -> None:
        raise NotImplementedError

    def _push_dense(self, groups: List[Tuple[object, List[NDArray]]], priority: int) -> None:
        """Push every dense key of one call (in key order); ``local`` updates them together."""
        for k, arrays in groups:
            self._push_impl(k, arrays, priority)

    def _pull_impl(self, key, outs: List[NDArray], priority: int) -> None:
        raise NotImplementedError

    def _pull_dense(self, groups: List[Tuple[object, List[NDArray]]], priority: int) -> None:
        """Pull every dense key of one call (in key order); ``local`` copies them in one op."""
        for k, arrays in groups:
            self._pull_impl(k, arrays, priority)

    # row_sparse keys (``sparse.py``); ``row_ids=None`` pulls the whole value into ``out``.
    def _rsp_init(self, key, value: NDArray) -> None:
        raise MXNetError(f"kvstore {self.type}: row_sparse keys are not supported by this store type")

    def _rsp_push(self, key, values: List[NDArray], priority: int) -> None:
        raise NotImplementedError

    def _rsp_pull(self, key, out: NDArray, row_ids: Optional[NDArray], priority: int) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} type={self.type!r} keys={len(self._meta)}>"


KVStoreBase = KVStore   # MXNet's name for the base class (``mx.kvstore.KVStoreBase.register``)


def _norm_key(key, what: str):
    if isinstance(key, str):
        return key
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        return int(key)
    raise MXNetError(f"kvstore.{what}: unexpected type for keys: {type(key).__name__} ({key!r}); "
                     "keys are ints or strs")


def _is_rsp(a) -> bool:
    return getattr(a, "stype", "default") == "row_sparse"


def is_capable(kv, capability: str) -> bool:
    """``kv.is_capable(capability)`` for any store object: one without ``is_capable`` (a
    duck-typed store) is taken to run an optimizer and nothing else, and a capability it does
    not know is taken as absent."""
    check = getattr(kv, "is_capable", None)
    if check is None:
        return capability.lower() == KVStore.OPTIMIZER
    try:
        return bool(check(capability))
    except MXNetError:
        return False


def create(name: str = "local") -> KVStore:
    """Create a store: ``'local'`` (reduce on CPU) or ``'device'`` (reduce on the devices).

    As in MXNet the name is lower-cased; a registered name is used as is, otherwise a name
    containing ``'device'`` (or ``'nccl'``) makes a ``device`` store and any other name a
    ``local`` one (legacy names such as ``'local_allreduce_device'`` keep working). Names
    containing ``'dist'`` need a registered distributed type.
    """
    if not isinstance(name, str):
        raise MXNetError(f"kvstore.create: name must be a string, got {type(name).__name__}")
    lname = name.lower()
    klass = KVStore.kv_registry.get(lname)
    if klass is None:
        if "dist" in lname:
            raise MXNetError(f"kvstore.create: no distributed kvstore type {name!r} is registered "
                             f"(registered: {sorted(KVStore.kv_registry)})")
        base = "device" if ("device" in lname or "nccl" in lname) else "local"
        klass = KVStore.kv_registry[base]
    return klass(lname)
