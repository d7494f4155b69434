"""Gluon ``Trainer``: applies an optimizer to a set of Parameters, reducing gradients through a KVStore.

``step(batch_size)`` = ``allreduce_grads()`` (sum each parameter's gradients over its devices,
and over workers in distributed training) + ``update(batch_size)`` (the optimizer, with
``rescale_grad = 1/batch_size``). With ``update_on_kvstore`` the KVStore applies the optimizer
itself and ``pushpull`` brings back the new weights instead. The choice of KVStore follows MXNet
1.9.1: none for one device unless distributed, ``'local'`` falls back to updating here for very
large arrays, and a KVStore that cannot run an optimizer updates here.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional

import numpy as np

from .. import optimizer as opt
from ..base import MXNetError
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]


def _kvstore_module():
    """``mxref.kvstore`` when it is available (Trainer works without it for one device)."""
    try:
        from .. import kvstore  # noqa: PLC0415 - optional part of the package
    except ImportError:
        return None
    return kvstore


def _is_kvstore(obj) -> bool:
    return all(hasattr(obj, m) for m in ("init", "push", "pull"))


def _create_kvstore(kvstore, num_device: int, arg_params: Dict[str, object]):
    """MXNet's ``model._create_kvstore``: the KVStore to use (or None) and update_on_kvstore."""
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None       # one device, one machine: nothing to reduce
        else:
            kvs = _kvstore_module()
            if kvs is None:
                raise MXNetError(f"Trainer: kvstore '{kvstore}' needs mxref.kvstore, which is not available")
            kv = kvs.create(kvstore)
            if kvstore == "local":
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    elif _is_kvstore(kvstore):
        kv = kvstore
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= _capable(kv, "optimizer")
    return kv, update_on_kvstore


def _capable(kv, what: str) -> bool:
    """``kv.is_capable(what)`` (``mxref.kvstore.base.is_capable``: unknown names are absent)."""
    kvs = _kvstore_module()
    if kvs is not None:
        return kvs.base.is_capable(kv, what)
    check = getattr(kv, "is_capable", None)
    return what == "optimizer" if check is None else bool(check(what))


class Trainer:
    """Updates ``params`` with ``optimizer`` (a name plus ``optimizer_params``, or an Optimizer).

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameter
        Dicts are taken in sorted name order (the indices the optimizer and KVStore see).
    optimizer : str or Optimizer
    optimizer_params : dict, optional
        E.g. ``{'learning_rate': 0.1, 'wd': 1e-4}``.
    kvstore : str, KVStore or None
        'device' (default), 'local', 'dist_sync', ...; unused for one device and one machine.
    update_on_kvstore : bool, optional
        Whether the KVStore applies the optimizer (default: decided as MXNet 1.9.1 does).

    Examples
    --------
    >>> trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    >>> with autograd.record():
    ...     loss = loss_fn(net(x), y)
    >>> loss.backward()
    >>> trainer.step(batch_size)        # gradients are scaled by 1/batch_size
    """

    def __init__(self, params, optimizer, optimizer_params: Optional[dict] = None, kvstore="device",
                 compression_params=None, update_on_kvstore: Optional[bool] = None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[k] for k in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"First argument must be a list or dict of Parameters, got {type(params)}.")
        self._params: List[Parameter] = []
        self._param2idx: Dict[str, int] = {}
        for i, p in enumerate(params):
            if not isinstance(p, Parameter):
                raise ValueError("First argument must be a list or dict of Parameters, got list of "
                                 f"{type(p)}.")
            self._param2idx[p.name] = i
            self._params.append(p)
            p._trainer = self
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._reset_kvstore()

    def _check_contexts(self):
        """The contexts of the first Parameter. Every Parameter must have as many copies (one per
        data-parallel replica), but, unlike MXNet 1.x, not on the same devices: a model split over
        devices (``initialize(ctx=...)`` per child block) trains with one Trainer. Updater ``k``
        updates the ``k``-th copy of every Parameter, wherever it lives."""
        contexts = None
        for p in self._params:
            ctx = p.list_ctx()
            if contexts is not None and len(contexts) != len(ctx):
                raise AssertionError(f"All Parameters must be initialized on the same number of contexts, "
                                     f"but Parameter {p.name} is initialized on {ctx} while previous "
                                     f"Parameters are initialized on {contexts}.")
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params: dict) -> None:
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError("optimizer_params must be None if optimizer is an instance of "
                                     "Optimizer instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]
        self._lists_key, self._lists = None, []      # what _update_lists made for these updaters

    def _reset_kvstore(self) -> None:
        if getattr(self, "_kvstore", None) is not None and _capable(self._kvstore, "distributed"):
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self) -> None:
        config = self._kvstore_params
        arg_arrays = {p.name: p.list_data()[0] for p in self._params}
        kvstore, update_on_kvstore = _create_kvstore(config["kvstore"], len(self._contexts), arg_arrays)
        self._distributed = _capable(kvstore, "distributed") if kvstore else False
        if self._distributed and _capable(kvstore, "async"):
            update_on_kvstore = True
            if config["update_on_kvstore"] is False:
                raise ValueError("Please set update_on_kvstore=True when training in async mode.")
        if config["update_on_kvstore"] is not None:
            update_on_kvstore = config["update_on_kvstore"]
        if update_on_kvstore and kvstore is not None and not _capable(kvstore, "optimizer"):
            if config["update_on_kvstore"]:
                raise ValueError(f"Please set update_on_kvstore=False when training with {type(kvstore)}")
            update_on_kvstore = False
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    def _init_params(self) -> None:
        """Give the KVStore each parameter's initial value (and every device the same copy)."""
        pending = []
        if self._kvstore:
            for p in self._params_to_init:
                if p._deferred_init:
                    pending.append(p)
                    continue
                arrays = p.list_data()
                idx = self._param2idx[p.name]
                if hasattr(self._kvstore, "broadcast"):
                    self._kvstore.broadcast(idx, arrays[0], arrays)
                else:
                    self._kvstore.init(idx, arrays[0])
                    self._kvstore.pull(idx, arrays)
        self._params_to_init = pending

    def _prepare(self) -> None:
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # -- public API ---------------------------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        return self._optimizer.learning_rate

    @property
    def optimizer(self) -> opt.Optimizer:
        return self._optimizer

    def set_learning_rate(self, lr: float) -> None:
        """Set the optimizer's learning rate."""
        self._optimizer.set_learning_rate(lr)

    def _check_and_rescale_grad(self, scale: float) -> None:
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning("Possible change in the `batch_size` from previous `step` detected. "
                                  "Optimizer gradient normalizing factor will not change w.r.t new "
                                  "batch_size when update_on_kvstore=True and when distributed kvstore "
                                  "is used.")
        self._optimizer.rescale_grad = scale

    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """One optimization step: reduce the gradients, then update with ``rescale_grad=1/batch_size``."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._prepare()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients over devices (and workers), leaving the sum on every device."""
        self._prepare()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError("allreduce_grads() when parameters are updated on kvstore is not "
                                 "supported. Try setting `update_on_kvstore` to False when creating trainer.")
        self._allreduce_grads()

    def _allreduce_grads(self) -> None:
        if not self._kvstore:
            return
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            grads = p.list_grad()
            if self._update_on_kvstore:
                self._kvstore.pushpull(i, grads, out=p.list_data(), priority=-i)
            else:
                self._kvstore.pushpull(i, grads, priority=-i)

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """Apply the optimizer (after ``allreduce_grads``), with ``rescale_grad=1/batch_size``."""
        self._prepare()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError("update() when parameters are updated on kvstore is not supported. Try "
                                 "setting `update_on_kvstore` to False when creating trainer.")
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad: bool = False) -> None:
        # mx.contrib.amp.init_trainer attaches a loss scaler: a step whose gradients overflowed
        # (the loss scale was too large) is skipped, and the scaler lowers the scale.
        scaler = getattr(self, "_amp_loss_scaler", None)
        if scaler is not None and scaler.has_overflow(self._params):
            return
        if self._kvstore and self._update_on_kvstore:
            return
        # NOTE: MXNet also refuses parameters whose gradient backward did not refresh since the
        # last step; mxref's autograd keeps no freshness flag, so every gradient is used.
        for updater, idx, grads, weights in self._update_lists():
            updater(idx, grads, weights)

    def _update_lists(self) -> list:
        """Per updater (device), the indices, gradients and weights to update: remade only when
        some Parameter's arrays were replaced (``Parameter.arrays_version``) or a ``grad_req``
        changed, so a training step does not walk its parameters' arrays."""
        key = (Parameter.arrays_version, tuple([p.grad_req for p in self._params]))
        if self._lists_key != key:
            updates: List[list] = [[] for _ in self._updaters]
            for i, p in enumerate(self._params):
                if p.grad_req == "null":
                    continue
                for upd, arr, grad in zip(updates, p.list_data(), p.list_grad()):
                    upd.append((i, grad, arr))
            self._lists = [(updater, *map(list, zip(*upd)))
                           for updater, upd in zip(self._updaters, updates) if upd]
            self._lists_key = key
        return self._lists

    def save_states(self, fname: str) -> None:
        """Write the optimizer state (momentum, ...) and the optimizer itself to ``fname``.

        The file is data-only (MXNet's NDArray dict format plus a JSON entry; see
        ``mxref/optimizer/states_format.py``): loading it never runs code.
        """
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, "wb") as f:
                f.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname: str, allow_pickle: Optional[bool] = None) -> None:
        """Read states written by ``save_states`` (the parameters' lr/wd multipliers stay current).

        ``save_states`` writes a data-only file. ``allow_pickle=True`` (or ``MXREF_ALLOW_PICKLE=1``)
        also reads pickled ``.states`` files such as MXNet's. Warning: unpickling runs any code
        the file names; allow it only for files you trust.
        """
        self._prepare()
        if self._update_on_kvstore:
            if allow_pickle is None:   # a dist store's load_optimizer_states takes no flag
                self._kvstore.load_optimizer_states(fname)
            else:
                self._kvstore.load_optimizer_states(fname, allow_pickle=allow_pickle)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states, allow_pickle=allow_pickle, source=fname)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))
