"""``DataParallelExecutorGroup``: one executor per context, each fed its slice of every batch.

Data parallelism as MXNet's Module does it: the batch is split along its batch axis (``'N'`` of
the input's layout) in proportion to a per-context workload; every context holds a full copy of
the parameters and computes gradients on its slice. Summing those gradients and updating the
copies is the kvstore's (or ``model._update_params``'s) job, not this group's.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence

from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context, cpu
from ..io.base import DataDesc

__all__ = ["DataParallelExecutorGroup", "split_input_slice"]


def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> List[slice]:
    """Cut ``range(batch_size)`` into one contiguous slice per device, sized by workload.

    The last device takes what rounding left over. Raises ``MXNetError`` when a slice would be
    empty (more devices than examples).
    """
    total = float(sum(work_load_list))
    counts = [int(round(w * batch_size / total)) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for count in counts:
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise MXNetError(f"split_input_slice: batch of {batch_size} cannot be split over "
                             f"{len(work_load_list)} devices with workloads {list(work_load_list)}: "
                             "some slices would be empty")
        slices.append(slice(begin, end))
    return slices


def _slice_along(arr: nd.NDArray, sl: slice, axis: int) -> nd.NDArray:
    """``arr``'s part ``sl`` along ``axis`` (axis 0 is a view, other axes a copy)."""
    if axis == 0:
        return arr[sl.start:sl.stop]
    return nd.slice_axis(arr, axis=axis, begin=sl.start, end=sl.stop)


def _load_general(sources: List[nd.NDArray], targets, major_axis: List[int]) -> None:
    """Copy each source batch's slices into the per-device arrays ``targets[i] = [(slice, dst)]``."""
    for src, dev_targets, axis in zip(sources, targets, major_axis):
        for sl, dst in dev_targets:
            if axis >= 0 and (sl.start != 0 or src.shape[axis] != sl.stop):
                part = _slice_along(src, sl, axis)
            else:
                part = src
            if not isinstance(part, nd.NDArray):
                part = nd.array(part, ctx=dst.context, dtype=dst.dtype)
            if part.dtype != dst.dtype:
                part = part.astype(dst.dtype)
            part.copyto(dst)


def _merge_multi_context(outputs: List[List[nd.NDArray]], major_axis: List[int]) -> List[nd.NDArray]:
    """One array per output: the devices' parts joined along the batch axis (on the first device)."""
    merged = []
    for tensors, axis in zip(outputs, major_axis):
        if axis >= 0 and len(tensors) > 1:
            first = tensors[0].context
            merged.append(nd.concat(*[t.as_in_context(first) for t in tensors], dim=axis))
        else:
            merged.append(tensors[0])
    return merged


def _prepare_group2ctxs(group2ctxs, num_contexts: int) -> list:
    """One ``group2ctx`` per data-parallel context: ``None``, one dict for all of them, or a list
    with one dict per context (MXNet's ``_prepare_group2ctxs``: data x model parallelism)."""
    if group2ctxs is None:
        return [None] * num_contexts
    if isinstance(group2ctxs, dict):
        # A group's value is one Context for every data-parallel copy, or a list of them: one
        # per copy, or a single one repeated.
        per_copy = [{} for _ in range(num_contexts)]
        for group, ctxs in group2ctxs.items():
            if isinstance(ctxs, Context):
                ctxs = [ctxs]
            ctxs = list(ctxs)
            if len(ctxs) == 1:
                ctxs = ctxs * num_contexts
            if len(ctxs) != num_contexts:
                raise MXNetError(f"group2ctxs['{group}']: {len(ctxs)} contexts for {num_contexts} "
                                 "data-parallel contexts; give one, or one per context")
            for i, c in enumerate(ctxs):
                per_copy[i][group] = c
        return per_copy
    if isinstance(group2ctxs, (list, tuple)):
        if len(group2ctxs) != num_contexts:
            raise MXNetError(f"group2ctxs: {len(group2ctxs)} dicts for {num_contexts} contexts; give "
                             "one dict per context, or one dict for all")
        if not all(g is None or isinstance(g, dict) for g in group2ctxs):
            raise MXNetError("group2ctxs: a list must hold one dict (group name to Context) per context")
        return list(group2ctxs)
    raise MXNetError(f"group2ctxs must be a dict or a list of dicts, got {type(group2ctxs).__name__}")


class DataParallelExecutorGroup:
    """The executors of a ``Module``: one per context, sharing parameters' names and layout.

    Parameters
    ----------
    symbol : Symbol
        The network.
    contexts : list of Context
        One executor is bound on each.
    workload : list of float
        Relative share of every batch each context gets.
    data_shapes, label_shapes : list of DataDesc or (name, shape)
        Whole-batch shapes; each executor is bound with its slice's shape.
    param_names : list of str
        The arguments that are learned parameters.
    for_training : bool
        Bind with gradients (else ``grad_req='null'`` everywhere).
    inputs_need_grad : bool
        Also compute gradients for the data inputs.
    shared_group : DataParallelExecutorGroup, optional
        Borrow its parameters and memory (bucketing).
    fixed_param_names : list of str, optional
        Parameters that get no gradient.
    grad_req : str, list or dict
        The gradient request of parameters (and inputs, with ``inputs_need_grad``).
    state_names : list of str, optional
        Arguments that are states: neither data nor parameters, no gradient.
    """

    def __init__(self, symbol, contexts: List[Context], workload: List[float], data_shapes,
                 label_shapes, param_names: List[str], for_training: bool, inputs_need_grad: bool,
                 shared_group: Optional["DataParallelExecutorGroup"] = None, logger=logging,
                 fixed_param_names: Optional[List[str]] = None, grad_req="write",
                 state_names: Optional[List[str]] = None, group2ctxs=None):
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.group2ctxs = _prepare_group2ctxs(group2ctxs, len(self.contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
        if label_shapes is not None:
            label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        self.grad_req = self._grad_reqs(grad_req if for_training else "null", [d.name for d in data_shapes])
        self.shared_data_arrays = (shared_group.shared_data_arrays if shared_group is not None
                                   else [{} for _ in self.contexts])
        self.batch_size = None
        self.slices: Optional[List[slice]] = None
        self.execs: list = []
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [DataDesc.get_batch_axis(symbol[i].attr("__layout__"))
                               for i in range(self.num_outputs)]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_names: List[str]) -> Dict[str, str]:
        """Per-argument requests: parameters get ``grad_req``, data only with ``inputs_need_grad``."""
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise MXNetError(f"grad_req: {len(grad_req)} values for arguments {self.arg_names}")
            return dict(zip(self.arg_names, grad_req))
        if not isinstance(grad_req, (str, dict)):
            raise ValueError("grad_req must be one of str, list, tuple, or dict.")
        default = grad_req if isinstance(grad_req, str) else "write"
        reqs = {}
        for name in self.arg_names:
            if name in self.param_names:
                reqs[name] = "null" if name in self.fixed_param_names else default
            elif name in data_names:
                reqs[name] = default if self.inputs_need_grad else "null"
            else:
                reqs[name] = "null"
        if isinstance(grad_req, dict):
            reqs.update(grad_req)
        return reqs

    # -- binding -----------------------------------------------------------------------------
    def decide_slices(self, data_shapes: List[DataDesc]) -> List[int]:
        """Fix the batch size and the per-device slices; returns each input's batch axis."""
        major_axis = [DataDesc.get_batch_axis(x.layout) for x in data_shapes]
        for (name, shape), axis in zip(data_shapes, major_axis):
            if axis == -1:
                continue
            if self.batch_size is not None and shape[axis] != self.batch_size:
                raise MXNetError(f"all data must have the same batch size: batch_size = "
                                 f"{self.batch_size}, but {name} has shape {shape}")
            if self.batch_size is None:
                self.batch_size = shape[axis]
                self.slices = split_input_slice(self.batch_size, self.workload)
        return major_axis

    def _sliced_shape(self, shapes: List[DataDesc], i: int, major_axis: List[int]) -> List[DataDesc]:
        out = []
        for desc, axis in zip(shapes, major_axis):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            out.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return out

    def _bind_ith_exec(self, i: int, data_shapes, label_shapes, shared_group):
        shared_exec = None if shared_group is None else shared_group.execs[i]
        ctx = self.contexts[i]
        descs = self._sliced_shape(data_shapes, i, self.data_layouts)
        if label_shapes is not None:
            descs += self._sliced_shape(label_shapes, i, self.label_layouts)
        shapes = {d.name: d.shape for d in descs}
        types = {d.name: d.dtype for d in descs}
        return self.symbol.simple_bind(ctx, grad_req=self.grad_req, type_dict=types,
                                       group2ctx=self.group2ctxs[i],
                                       shared_arg_names=self.param_names, shared_exec=shared_exec,
                                       shared_buffer=self.shared_data_arrays[i], **shapes)

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape: bool = False) -> None:
        """Bind (or, with ``reshape``, re-shape) one executor per context for these batch shapes."""
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = self.decide_slices(label_shapes) if label_shapes is not None else None
        for i in range(len(self.contexts)):
            if reshape:
                descs = self._sliced_shape(data_shapes, i, self.data_layouts)
                if label_shapes is not None:
                    descs += self._sliced_shape(label_shapes, i, self.label_layouts)
                self.execs[i] = self.execs[i].reshape(partial_shaping=True, allow_up_sizing=True,
                                                      **{d.name: d.shape for d in descs})
            else:
                self.execs.append(self._bind_ith_exec(i, data_shapes, label_shapes, shared_group))
        self.data_shapes, self.label_shapes = data_shapes, label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes is not None else []
        self._collect_arrays()

    def reshape(self, data_shapes, label_shapes) -> None:
        """Re-bind for new batch shapes (no-op when they are unchanged)."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _collect_arrays(self) -> None:
        execs, slices = self.execs, self.slices
        self.data_arrays = [[(slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                            for name, _ in self.data_shapes]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        self.label_arrays = None
        if self.label_shapes is not None:
            self.label_arrays = [[(slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                                 for name, _ in self.label_shapes]
        self.param_arrays = [[e.arg_arrays[i] for e in execs]
                             for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.grad_arrays = None
        if self.for_training:
            self.grad_arrays = [[e.grad_arrays[i] for e in execs]
                                for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]
        self.input_grad_arrays = None
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_arrays[self.arg_names.index(name)] for e in execs]
                                      for name in self.data_names if name in self.arg_names]

    # -- parameters --------------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_extra: bool = False) -> None:
        """Copy parameter values into every executor."""
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params: Dict[str, nd.NDArray], aux_params: Dict[str, nd.NDArray]) -> None:
        """Write the devices' parameters into the given CPU arrays (the mean over devices)."""
        for names, blocks, target in ((self.param_names, self.param_arrays, arg_params),
                                      (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                if len(block) == 1:
                    value = block[0]
                else:
                    # NOTE: copies agree after a kvstore update; the mean matters for aux states
                    # (BatchNorm statistics), which every device updates from its own slice.
                    value = block[0].copyto(cpu())
                    for w in block[1:]:
                        value = value + w.copyto(cpu())
                    value = value / len(block)
                if value.dtype != target[name].dtype:
                    value = value.astype(target[name].dtype)
                value.copyto(target[name])

    # -- computation -------------------------------------------------------------------------
    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        """Load the batch's slices into the executors and push their forward passes."""
        _load_general(data_batch.data, self.data_arrays, self.data_layouts)
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None and data_batch.label:
            _load_general(data_batch.label, self.label_arrays, self.label_layouts)
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def get_outputs(self, merge_multi_context: bool = True, begin: int = 0, end: Optional[int] = None):
        """Outputs ``begin:end``, merged across devices, or as ``[[out_dev0, out_dev1...], ...]``."""
        end = self.num_outputs if end is None else end
        outputs = [[exe.outputs[i] for exe in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            outputs = _merge_multi_context(outputs, self.output_layouts[begin:end])
        return outputs

    def get_states(self, merge_multi_context: bool = True):
        """The state arrays, merged across devices or per device."""
        if merge_multi_context:
            return _merge_multi_context(self.state_arrays, [0] * len(self.state_arrays))
        return self.state_arrays

    def get_input_grads(self, merge_multi_context: bool = True):
        """Gradients of the data inputs (needs ``inputs_need_grad``)."""
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads: the module was bound with inputs_need_grad=False")
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def backward(self, out_grads=None) -> None:
        """Push every executor's backward pass, each with its slice of the head gradients."""
        if not self.for_training:
            raise MXNetError("backward: re-bind with for_training=True to run backward")
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, nd.NDArray):
            out_grads = [out_grads]
        for i, exe in enumerate(self.execs):
            sliced = []
            for grad, axis in zip(out_grads, self.output_layouts):
                part = _slice_along(grad, self.slices[i], axis) if axis >= 0 else grad
                sliced.append(part.as_in_context(self.contexts[i]))
            exe.backward(out_grads=sliced)

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Feed each device's outputs and its slice of ``labels`` to ``eval_metric``."""
        for i, (exe, islice) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                labels_slice = labels[i]
            else:
                labels_slice = [_slice_along(label, islice, axis) if axis >= 0 else label
                                for label, axis in zip(labels, self.label_layouts or [0] * len(labels))]
            label_names = self.label_names or [f"label{j}" for j in range(len(labels_slice))]
            eval_metric.update_dict(OrderedDict(zip(label_names, labels_slice)),
                                    OrderedDict(zip(self.output_names, exe.outputs)))

    def install_monitor(self, mon) -> None:
        """Attach a monitor (``mon.install(executor)``) to every executor."""
        for exe in self.execs:
            mon.install(exe)
