"""Checkpoint files (``prefix-symbol.json`` + ``prefix-%04d.params``) and the kvstore training helpers.

The file formats are MXNet's: the symbol is the JSON of ``Symbol.save`` and the parameters are one
``mx.nd.save`` dict whose keys are ``arg:<name>`` and ``aux:<name>``, so checkpoints move both ways
between mxref and MXNet 1.9.1. The ``_create_kvstore`` / ``_initialize_kvstore`` /
``_update_params_on_kvstore`` / ``_update_params`` helpers are the data-parallel update step that
``Module`` (and MXNet's ``FeedForward``) share.
"""
from __future__ import annotations

import logging
import os
from collections import namedtuple
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import ndarray as nd
from . import symbol as sym
from .base import DTYPE_MX_TO_NP, MXNetError
from .context import cpu

__all__ = ["BatchEndParam", "save_checkpoint", "load_params", "load_checkpoint"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
BatchEndParam.__doc__ = "What a ``batch_end_callback`` receives: epoch, batch number, metric, locals()."


# ---------------------------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------------------------

def save_checkpoint(prefix: str, epoch: int, symbol, arg_params: Dict[str, nd.NDArray],
                    aux_params: Dict[str, nd.NDArray], remove_amp_cast: bool = True) -> None:
    """Write ``prefix-symbol.json`` (when ``symbol`` is given) and ``prefix-%04d.params``.

    Parameters
    ----------
    prefix : str
        Path prefix of both files.
    epoch : int
        Epoch number, written as four digits in the parameter file's name.
    symbol : Symbol or None
        The network; ``None`` writes only the parameters.
    arg_params, aux_params : dict of str to NDArray
        Weights and auxiliary states, saved as ``arg:<name>`` / ``aux:<name>`` (copied to CPU).
    """
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
    param_name = "%s-%04d.params" % (prefix, epoch)
    nd.save(param_name, params_to_save_dict(arg_params, aux_params))
    logging.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix: str, epoch: int) -> Tuple[Dict[str, nd.NDArray], Dict[str, nd.NDArray]]:
    """``(arg_params, aux_params)`` from ``prefix-%04d.params``; keys lose their ``arg:``/``aux:``."""
    fname = "%s-%04d.params" % (prefix, epoch)
    save_dict = nd.load(fname)
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return {}, {}
    if not isinstance(save_dict, dict):
        raise MXNetError(f"load_params: '{fname}' holds an unnamed list of arrays, not a checkpoint "
                         "dict with 'arg:'/'aux:' keys")
    return split_save_dict(save_dict, fname)


def params_to_save_dict(arg_params: Dict[str, nd.NDArray], aux_params: Dict[str, nd.NDArray]) -> dict:
    """MXNet's parameter-file dict: ``arg:<name>`` and ``aux:<name>`` keys, arrays copied to CPU."""
    save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
    return save_dict


def split_save_dict(save_dict: dict, fname: str, strict: bool = False):
    """``(arg_params, aux_params)`` from a parameter-file dict, the ``arg:``/``aux:`` prefixes
    removed; other keys are skipped, or with ``strict`` an error naming the file and key."""
    arg_params: Dict[str, nd.NDArray] = {}
    aux_params: Dict[str, nd.NDArray] = {}
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
        elif strict:
            raise ValueError(f"Invalid param file {fname}: key '{key}' has no arg:/aux: prefix")
    return arg_params, aux_params


def load_checkpoint(prefix: str, epoch: int):
    """``(symbol, arg_params, aux_params)`` from the two files ``save_checkpoint`` writes.

    Every error names the file at fault. A parameter whose dtype differs from the one its
    variable declares (``__dtype__``) is refused rather than silently cast.
    """
    symbol = sym.load(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    declared = {name: attrs["__dtype__"] for name, attrs in symbol.attr_dict().items()
                if "__dtype__" in attrs}
    for kind, params in (("arg", arg_params), ("aux", aux_params)):
        for name, value in params.items():
            if name not in declared:
                continue
            try:
                want = DTYPE_MX_TO_NP[int(declared[name])]
            except (KeyError, ValueError):
                raise MXNetError(f"load_checkpoint: {prefix}-symbol.json: variable '{name}' has an "
                                 f"unknown __dtype__ {declared[name]!r:.50}") from None
            if np.dtype(value.dtype) != want:
                raise MXNetError(f"load_checkpoint: {prefix}-%04d.params: '{kind}:{name}' is "
                                 f"{np.dtype(value.dtype).name}, but the network in "
                                 f"{prefix}-symbol.json declares {want.name}" % epoch)
    return symbol, arg_params, aux_params


# ---------------------------------------------------------------------------------------------
# kvstore helpers (MXNet's model.py logic; the kvstore package is imported only when needed)
# ---------------------------------------------------------------------------------------------

def _is_kvstore(obj) -> bool:
    return obj is not None and not isinstance(obj, str) and hasattr(obj, "push") and hasattr(obj, "pull")


def _create_kvstore(kvstore, num_device: int, arg_params: Dict[str, nd.NDArray]):
    """``(kv, update_on_kvstore)`` for a kvstore given as None, a name or an instance.

    A name with one device and no ``dist`` needs no store at all (``kv=None``): the module then
    updates its single copy of the weights directly. ``'local'`` with a parameter above 16M
    elements updates on the workers instead of in the store, as MXNet does.
    """
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif _is_kvstore(kvstore):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            try:
                from . import kvstore as kvs  # noqa: PLC0415 - optional until a store is asked for
            except ImportError as exc:
                raise MXNetError(f"kvstore '{kvstore}' with {num_device} device(s) needs mxref.kvstore, "
                                 f"which cannot be imported ({exc}); pass kvstore=None") from None
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    if kv is None:
        update_on_kvstore = False
    elif hasattr(kv, "is_capable"):
        update_on_kvstore &= bool(kv.is_capable("optimizer"))
    return kv, update_on_kvstore


def _is_capable(kv, capability: str) -> bool:
    """``kv.is_capable(capability)``; False for stores that do not know the name (duck-typed
    stores without ``is_capable`` are taken to run an optimizer and nothing more)."""
    from .kvstore.base import is_capable  # noqa: PLC0415 - kvstore is imported only when used
    return is_capable(kv, capability)


def _initialize_kvstore(kvstore, param_arrays: List[List[nd.NDArray]], arg_params: Dict[str, nd.NDArray],
                        param_names: List[str], update_on_kvstore: bool) -> None:
    """Store every parameter's initial value; with ``update_on_kvstore`` also copy it to each device."""
    for idx, param_on_devs in enumerate(param_arrays):
        name = param_names[idx]
        value = arg_params[name]
        if update_on_kvstore and getattr(param_on_devs[0], "stype", "default") == "row_sparse" and \
                getattr(value, "stype", "default") != "row_sparse":
            # A row_sparse weight makes a row_sparse key, whose rows reach the devices through
            # ``Module.prepare`` (row_sparse_pull); the pulls below leave such outputs alone.
            value = value.tostype("row_sparse")
        if update_on_kvstore and hasattr(kvstore, "broadcast"):
            kvstore.broadcast(name, value, out=param_on_devs)
            continue
        kvstore.init(name, value)
        # A store that broadcasts rank 0's value at init (``init_broadcast``, the allreduce store):
        # pull it so every worker starts from the same weights even when updates run on workers.
        if update_on_kvstore or _is_capable(kvstore, "init_broadcast"):
            kvstore.pull(name, out=param_on_devs, priority=-idx)


def _pushpull(kvstore, name: str, values: List[nd.NDArray], out: List[nd.NDArray], priority: int) -> None:
    if hasattr(kvstore, "pushpull"):
        kvstore.pushpull(name, values, out=out, priority=priority)
    else:
        kvstore.push(name, values, priority=priority)
        kvstore.pull(name, out=out, priority=priority)


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names: List[str]) -> None:
    """Push each gradient list (summed in the store, which runs the optimizer) and pull the weights.

    ``priority=-index``: the first layers, which the next forward pass needs first, go first.
    A ``local``/``device`` store gets all dense keys in one ``pushpull`` instead, so its
    optimizer updates them as groups (fused multi-tensor updates, see ``LocalKVStore._push_dense``);
    the priorities only order work inside one process there, and the ops' dependencies do not
    depend on them.
    """
    from .kvstore.local import LocalKVStore  # noqa: PLC0415 - kvstore is imported only when used
    batched = isinstance(kvstore, LocalKVStore) and kvstore.groups_keys()
    names, grads, args = [], [], []
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        if batched and all(getattr(x, "stype", "default") == "default" for x in (*grad_list, *arg_list)):
            names.append(param_names[index])
            grads.append(grad_list)
            args.append(arg_list)
            continue
        _pushpull(kvstore, param_names[index], grad_list, arg_list, -index)
    if names:
        kvstore.pushpull(names, grads, out=args)


def _update_params(param_arrays, grad_arrays, updater, num_device: int, kvstore=None,
                   param_names: Optional[List[str]] = None) -> None:
    """Sum gradients through ``kvstore`` (if any), then run ``updater`` on every device's copy.

    Each device's copy of parameter ``i`` gets its own updater index ``i * num_device + k`` so the
    optimizer keeps one state per copy (MXNet's convention; ``Module`` maps these back to names).
    """
    updates: List[list] = [[] for _ in range(num_device)]
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        if kvstore and getattr(grad_list[0], "stype", "default") == "row_sparse":
            # row_sparse gradients (summed in a dense key) come back cast to row_sparse; a plain
            # pull would skip them (ignore_sparse) and leave each device its own gradient.
            kvstore.push(param_names[index], grad_list, priority=-index)
            kvstore.pull(param_names[index], out=grad_list, priority=-index, ignore_sparse=False)
        elif kvstore:
            _pushpull(kvstore, param_names[index], grad_list, grad_list, -index)
        for k, (w, g) in enumerate(zip(arg_list, grad_list)):
            updates[k].append((index * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            indices, grads, weights = zip(*dev_updates)
            updater(list(indices), list(grads), list(weights))
