"""``Module``: a Symbol bound on one or more contexts, with parameters, an optimizer and a kvstore.

The intermediate API (MXNet's names and defaults)::

    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(mx.init.Uniform(0.01))          # the default initializer
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.1})
    for batch in it:
        mod.forward(batch, is_train=True); mod.backward(); mod.update()
        mod.update_metric(metric, batch.label)

``fit``/``score``/``predict`` (``BaseModule``) are built from these steps.
"""
from __future__ import annotations

import logging
import warnings
from typing import List, Optional

from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MXNetError
from ..context import Context, cpu
from ..initializer import InitDesc, Uniform
from ..io.base import DataDesc
from ..model import (
    _create_kvstore,
    _initialize_kvstore,
    _is_capable,
    _update_params,
    _update_params_on_kvstore,
    load_checkpoint,
)
from .base_module import BaseModule, _check_input_names, _parse_data_desc
from .executor_group import DataParallelExecutorGroup

__all__ = ["Module"]


class Module(BaseModule):
    """A module over one Symbol.

    Parameters
    ----------
    symbol : Symbol
        The network (its loss layer last).
    data_names, label_names : list of str
        Input names that are data / labels (default ``('data',)`` / ``('softmax_label',)``);
        every other argument is a learned parameter.
    context : Context or list of Context
        Where to run; a list runs data-parallel, one executor per context.
    work_load_list : list of float, optional
        Share of each batch per context (default equal).
    fixed_param_names : list of str, optional
        Parameters that are not updated.
    state_names : list of str, optional
        Arguments that are states (set with ``set_states``, no gradient).
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=logging,
                 context=None, work_load_list: Optional[List[float]] = None,
                 fixed_param_names: Optional[List[str]] = None, state_names: Optional[List[str]] = None,
                 group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        context = cpu() if context is None else context
        self._context = list(context) if isinstance(context, (list, tuple)) else [context]
        if not all(isinstance(c, Context) for c in self._context):
            raise MXNetError(f"Module: context must be a Context or a list of them, got {context!r}")
        self._work_load_list = list(work_load_list) if work_load_list else [1] * len(self._context)
        if len(self._work_load_list) != len(self._context):
            raise MXNetError(f"Module: work_load_list has {len(self._work_load_list)} entries for "
                             f"{len(self._context)} contexts")
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        _check_input_names(symbol, self._data_names, "data", True)
        _check_input_names(symbol, self._label_names, "label", False)
        _check_input_names(symbol, self._state_names, "state", True)
        _check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        inputs = self._data_names + self._label_names + self._state_names
        self._param_names = [x for x in symbol.list_arguments() if x not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._compression_params = compression_params
        self._arg_params = self._aux_params = None
        self._params_dirty = False
        self._optimizer = self._kvstore = self._update_on_kvstore = self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group: Optional[DataParallelExecutorGroup] = None
        self._data_shapes = self._label_shapes = None

    # -- checkpoints -------------------------------------------------------------------------
    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False, **kwargs) -> "Module":
        """A module from ``prefix-symbol.json`` / ``prefix-%04d.params`` (bind it before use).

        ``kwargs`` go to ``Module(...)``; with ``load_optimizer_states`` the ``prefix-%04d.states``
        file is loaded by ``init_optimizer``.
        """
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params, mod._aux_params = args, auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False,
                        remove_amp_cast: bool = True) -> None:
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` (and ``prefix-%04d.states``)."""
        self._symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
        param_name = "%s-%04d.params" % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = "%s-%04d.states" % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # -- names and shapes --------------------------------------------------------------------
    @property
    def data_names(self) -> List[str]:
        return self._data_names

    @property
    def label_names(self) -> List[str]:
        return self._label_names

    @property
    def output_names(self) -> List[str]:
        return self._output_names

    @property
    def data_shapes(self) -> List[DataDesc]:
        self._check_bound("data_shapes")
        return self._data_shapes

    @property
    def label_shapes(self):
        self._check_bound("label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self):
        """``[(name, shape)]`` of the merged outputs."""
        self._check_bound("output_shapes")
        group = self._exec_group
        shapes = []
        for i, (name, axis) in enumerate(zip(group.output_names, group.output_layouts)):
            shape = list(group.execs[0].outputs[i].shape)
            if axis >= 0:
                shape[axis] = sum(exe.outputs[i].shape[axis] for exe in group.execs)
            shapes.append((name, tuple(shape)))
        return shapes

    def _check_bound(self, what: str) -> None:
        if not self.binded:
            raise MXNetError(f"{what}: call bind() first")

    # -- parameters --------------------------------------------------------------------------
    def get_params(self):
        """``(arg_params, aux_params)``: CPU copies, refreshed from the devices when needed."""
        self._check_ready("get_params")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing: bool = False, force_init: bool = False, allow_extra: bool = False) -> None:
        """Fill the parameters from ``arg_params``/``aux_params``, the rest by ``initializer``.

        A parameter missing from a given dict is an error unless ``allow_missing``; a name in the
        dicts that the network lacks is an error unless ``allow_extra``. Already initialized
        parameters are kept unless ``force_init``.
        """
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. init_params call "
                          "ignored.", stacklevel=2)
            return
        self._check_bound("init_params")

        def _impl(desc, arr, cache):
            if cache is not None:
                if desc in cache:
                    if cache[desc] is not arr:
                        src = cache[desc]
                        if not isinstance(src, nd.NDArray):
                            src = nd.array(src)
                        if tuple(src.shape) != arr.shape:
                            raise MXNetError(f"init_params: '{desc}' has shape {tuple(src.shape)}, "
                                             f"the network needs {arr.shape}")
                        (src.astype(arr.dtype) if src.dtype != arr.dtype else src).copyto(arr)
                    return
                if not allow_missing:
                    raise RuntimeError(f"{desc} is not presented")
            if initializer is not None:
                initializer(desc, arr)

        attrs = self._symbol.attr_dict()
        for name, arr in sorted(self._arg_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def _assign_params(self, arg_params, aux_params, force_init: bool, allow_extra: bool) -> None:
        """``set_params(..., allow_missing=True)``: write the given values to every device."""
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)

    def _sync_params_from_devices(self) -> None:
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # -- binding -----------------------------------------------------------------------------
    def _reset_bind(self) -> None:
        self.binded = False
        self._exec_group = None
        self._data_shapes = self._label_shapes = None

    def bind(self, data_shapes, label_shapes=None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module=None,
             grad_req="write") -> None:
        """Allocate executors for batches of these shapes (``DataDesc`` or ``(name, shape)``)."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise MXNetError("bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (shared_module.binded and shared_module.params_initialized):
                raise MXNetError("bind: shared_module must be bound with initialized parameters")
            shared_group = shared_module._exec_group
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes, self._label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group, logger=self.logger,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req, state_names=self._state_names,
            group2ctxs=self._group2ctxs)
        self.binded = True
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params, self._aux_params = shared_module._arg_params, shared_module._aux_params
        elif self.params_initialized:
            # Parameters loaded before binding (Module.load): put them on the devices now.
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            group = self._exec_group
            self._arg_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype, stype=block[0].stype)
                                for name, block in zip(group.param_names, group.param_arrays)}
            self._aux_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._aux_names, group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)

    def reshape(self, data_shapes, label_shapes=None) -> None:
        """Re-bind the executors for new batch shapes, keeping parameters and memory."""
        self._check_bound("reshape")
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # -- optimizer ---------------------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init: bool = False) -> None:
        """Create the optimizer (``rescale_grad = 1/batch_size``) and the kvstore, if one is needed.

        Updater indices are ``i * num_devices + k`` for parameter ``i`` on device ``k`` (or ``i``
        when the kvstore updates), and ``param_idx2name`` maps them back to names so that weight
        decay applies only to ``*_weight`` / ``*_gamma``.
        """
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        # Each update sums one push of every worker: the step's batch is num_workers batches.
        if kvstore and _is_capable(kvstore, "synchronous"):
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size
        ndev = len(self._context)
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * ndev + k: n for k in range(ndev) for i, n in enumerate(names)}
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise MXNetError("init_optimizer: optimizer must be a name or an Optimizer, "
                                 f"got {optimizer!r}")
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn("Optimizer created manually outside Module but rescale_grad is not "
                              f"normalized to 1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. "
                              f"{rescale_grad}). Is this intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer, self._kvstore, self._update_on_kvstore = optimizer, kvstore, update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            _initialize_kvstore(kvstore, self._exec_group.param_arrays, self._arg_params,
                                self._param_names, update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module) -> None:
        """Use ``shared_module``'s optimizer, kvstore and updater (bucketing)."""
        self._optimizer, self._kvstore = shared_module._optimizer, shared_module._kvstore
        self._update_on_kvstore, self._updater = shared_module._update_on_kvstore, shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        """Write the optimizer states (the kvstore's, when it updates) to ``fname`` (data-only)."""
        if not self.optimizer_initialized:
            raise MXNetError("save_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updater.get_states())

    def load_optimizer_states(self, fname: str, allow_pickle: Optional[bool] = None) -> None:
        """Load states written by ``save_optimizer_states`` (a data-only file).

        ``allow_pickle=True`` (or ``MXREF_ALLOW_PICKLE=1``) also reads pickled ``.states`` files
        such as MXNet's. Warning: unpickling runs any code the file names; trusted files only.
        """
        if not self.optimizer_initialized:
            raise MXNetError("load_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            if allow_pickle is None:   # a dist store's load_optimizer_states takes no flag
                self._kvstore.load_optimizer_states(fname)
            else:
                self._kvstore.load_optimizer_states(fname, allow_pickle=allow_pickle)
        else:
            with open(fname, "rb") as fin:
                self._updater.set_states(fin.read(), allow_pickle=allow_pickle, source=fname)

    # -- computation -------------------------------------------------------------------------
    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Pull the rows of row_sparse weights that ``data_batch`` needs, before its forward pass.

        ``sparse_row_id_fn(data_batch)`` returns ``{param_name: row_ids}`` (e.g. the csr batch's
        column indices, ``batch.data[0].indices``); each listed row_sparse parameter is then
        ``row_sparse_pull``-ed from the kvstore, which holds the only full copy of it when it
        updates (``update_on_kvstore``). ``data_batch`` may be None when the function ignores
        it (pulling every row before ``save_checkpoint``, as MXNet's examples do).
        """
        self._check_ready("prepare")
        if sparse_row_id_fn is None:
            return
        if not (self._kvstore and self._update_on_kvstore):
            warnings.warn("Parameters are not updated in the KVStore. No need to call "
                          "sparse_row_id_fn.", UserWarning, stacklevel=2)
            return
        row_ids = sparse_row_id_fn(data_batch)
        if not isinstance(row_ids, dict):
            raise MXNetError(f"prepare: sparse_row_id_fn must return a dict {{param_name: row_ids}}, "
                             f"got {type(row_ids).__name__}")
        group = self._exec_group
        for name, ids in row_ids.items():
            if name not in group.param_names:
                raise MXNetError(f"prepare: sparse_row_id_fn names {name!r}, which is not a "
                                 f"parameter of the module (parameters: {group.param_names})")
            idx = group.param_names.index(name)
            arrays = group.param_arrays[idx]
            if getattr(arrays[0], "stype", "default") != "row_sparse":
                warnings.warn(f"{name}.stype is not 'row_sparse'. No need to perform "
                              "row_sparse_pull.", UserWarning, stacklevel=2)
                continue
            self._kvstore.row_sparse_pull(name, arrays, row_ids=ids, priority=-idx)
            # The devices' copy changed: get_params must read it again (after fit's last
            # epoch-end sync, a prepare with every row is what makes the weights complete).
            self._params_dirty = True

    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        """Push the forward pass; a batch of a new shape re-binds first (``reshape``)."""
        self._check_ready("forward")
        new_shapes = tuple(tuple(d.shape) for d in data_batch.data)
        if new_shapes != tuple(d.shape for d in self._data_shapes):
            if getattr(data_batch, "provide_data", None):
                new_dshape = data_batch.provide_data
            else:
                new_dshape = [DataDesc(d.name, s, d.dtype, d.layout)
                              for d, s in zip(self._data_shapes, new_shapes)]
            new_lshape = None         # a batch without labels (predict on an array) binds none
            if getattr(data_batch, "provide_label", None):
                new_lshape = data_batch.provide_label
            elif getattr(data_batch, "label", None) and self._label_shapes:
                new_lshape = [DataDesc(d.name, tuple(lab.shape), d.dtype, d.layout)
                              for d, lab in zip(self._label_shapes, data_batch.label)]
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None) -> None:
        """Push the backward pass (``out_grads`` only for outputs that are not loss layers)."""
        self._check_ready("backward")
        self._exec_group.backward(out_grads=out_grads)

    def update(self) -> None:
        """Apply the optimizer to the gradients of the last backward pass (through the kvstore)."""
        if not (self.binded and self.params_initialized and self.optimizer_initialized):
            raise MXNetError("update: call bind(), init_params() and init_optimizer() first")
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                      group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                           num_device=len(self._context), kvstore=self._kvstore,
                           param_names=group.param_names)

    def get_outputs(self, merge_multi_context: bool = True):
        """The outputs of the last forward pass (merged across devices by default)."""
        self._check_ready("get_outputs")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True):
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._check_ready("get_input_grads")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context: bool = True):
        """The state arrays (``state_names``)."""
        self._check_ready("get_states")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None) -> None:
        """Set the states from per-device arrays ``states`` or fill them all with ``value``."""
        self._check_ready("set_states")
        if states is not None:
            for src_list, dst_list in zip(states, self._exec_group.state_arrays):
                for src, dst in zip(src_list, dst_list):
                    src.copyto(dst)
        else:
            for dst_list in self._exec_group.state_arrays:
                for dst in dst_list:
                    dst[:] = value

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Accumulate ``eval_metric`` over the last forward's outputs and ``labels``."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon) -> None:
        """Attach a monitor to every executor."""
        self._check_bound("install_monitor")
        self._exec_group.install_monitor(mon)
