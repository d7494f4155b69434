"""The Executor: a Symbol bound to arrays, run by the engine from a static memory plan.

``bind`` / ``simple_bind`` build the training graph, plan its memory and prepare one cached
engine operation per segment of nodes (``executor_plan``); ``forward`` and ``backward`` just push
those operations. Nothing waits: results are NDArrays whose reads wait for the pushed work::

    ex = net.simple_bind(mx.cpu(), data=(128, 784))      # arrays allocated, zero-filled
    ex.forward(is_train=True, data=batch)                # copies batch in, pushes the forward ops
    ex.backward()                                        # loss layers need no head gradient
    ex.grad_dict['fc1_weight'].asnumpy()                 # waits for the backward ops
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from .base import DTYPE_MX_TO_NP, MXNetError, normalize_dtype
from .context import Context
from .executor_plan import GraphPlan, allocate, build_graph, bulk_sizes, compile_nodes, compile_segments
from .ndarray.ndarray import NDArray, _empty
from .ndarray.utils import zeros
from .passes.memory_report import debug_str_footer
from .passes.place_device import check_group2ctx, placed_debug_str
from .symbol.symbol import Symbol

__all__ = ["Executor", "bind", "simple_bind"]

_REQS = ("null", "write", "add", "inplace")


class Executor:
    """A bound symbol (MXNet's ``mx.executor.Executor``); made by ``Symbol.bind``/``simple_bind``.

    Attributes
    ----------
    arg_arrays, grad_arrays, aux_arrays : list of NDArray
        In ``list_arguments()`` / ``list_auxiliary_states()`` order; ``grad_arrays[i]`` is ``None``
        for arguments with ``grad_req='null'``.
    outputs : list of NDArray
        The forward outputs. They are overwritten by the next ``forward``: copy what you keep.
    arg_dict, grad_dict, aux_dict, output_dict : dict of str to NDArray
    """

    def __init__(self, symbol, ctx: Context, plan: GraphPlan, arg_arrays: List[NDArray],
                 grad_arrays: List[Optional[NDArray]], aux_arrays: List[NDArray], grad_req: Dict[str, str],
                 group2ctx=None, shared_pool: Optional[list] = None):
        self._symbol = symbol
        self._ctx = ctx
        self._plan = plan
        self._grad_req = grad_req
        self._group2ctx = group2ctx
        self.arg_arrays = arg_arrays
        self.grad_arrays = grad_arrays
        self.aux_arrays = aux_arrays
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        idx = plan.idx
        bound = {}
        for name, arr in zip(self._arg_names + self._aux_names, arg_arrays + aux_arrays):
            bound[idx.entry_id(plan.input_nid[name], 0)] = arr
        self._head_grads: List[Optional[NDArray]] = []
        for nid in plan.head_grad_nids:
            arr = None
            if nid is not None:
                eid = idx.entry_id(nid, 0)
                arr = bound[eid] = zeros(plan.shape(eid), plan.ctx_of(nid, ctx), plan.dtype(eid))
            self._head_grads.append(arr)
        add_eids = set()
        for name, garr in zip(self._arg_names, grad_arrays):
            if name in plan.grad_eids:
                bound[plan.grad_eids[name]] = garr
                if grad_req[name] == "add":
                    add_eids.add(plan.grad_eids[name])
        self._arrays, self._pool = allocate(plan, ctx, bound, shared_pool)
        self.outputs = [self._arrays[idx.entry_id(e)] for e in plan.graph.outputs[:plan.num_forward_outputs]]
        ops = compile_nodes(plan, self._arrays, ctx, add_eids)
        nfwd = plan.num_forward_nodes
        self._fwd_ops = [op for op in ops if op.nid < nfwd]
        self._bwd_ops = [op for op in ops if op.nid >= nfwd]
        fwd_size, bwd_size = bulk_sizes(bool(self._bwd_ops))
        self._fwd_segments = compile_segments(self._fwd_ops, fwd_size, "ForwardSegment")
        self._bwd_segments = compile_segments(self._bwd_ops, bwd_size, "BackwardSegment")
        self._monitor: Optional[Callable] = None
        self._monitor_all = False
        self._single: Dict[int, object] = {}     # one-node segments, made when a monitor is set
        self._arg_dict = self._grad_dict = self._aux_dict = self._output_dict = None

    # -- dictionaries ------------------------------------------------------------------------
    @staticmethod
    def _get_dict(names: Sequence[str], arrays: Sequence) -> Dict[str, NDArray]:
        if len(set(names)) != len(names):
            raise ValueError(f"Duplicate names detected, {names}")
        return dict(zip(names, arrays))

    @property
    def arg_dict(self) -> Dict[str, NDArray]:
        """Argument name to its bound array."""
        if self._arg_dict is None:
            self._arg_dict = self._get_dict(self._arg_names, self.arg_arrays)
        return self._arg_dict

    @property
    def grad_dict(self) -> Dict[str, Optional[NDArray]]:
        """Argument name to its gradient array (``None`` for ``grad_req='null'``)."""
        if self._grad_dict is None:
            self._grad_dict = self._get_dict(self._arg_names, self.grad_arrays)
        return self._grad_dict

    @property
    def aux_dict(self) -> Dict[str, NDArray]:
        """Auxiliary state name to its array."""
        if self._aux_dict is None:
            self._aux_dict = self._get_dict(self._aux_names, self.aux_arrays)
        return self._aux_dict

    @property
    def output_dict(self) -> Dict[str, NDArray]:
        """Output name (``symbol.list_outputs()``) to its array."""
        if self._output_dict is None:
            self._output_dict = self._get_dict(self._symbol.list_outputs(), self.outputs)
        return self._output_dict

    # -- running -----------------------------------------------------------------------------
    def forward(self, is_train: bool = False, **kwargs) -> List[NDArray]:
        """Push the forward pass; returns ``outputs`` at once (reading them waits).

        Keyword arguments (NDArray or numpy arrays) are copied into the argument arrays of the
        same name first. ``is_train`` is what operators see (Dropout, BatchNorm statistics).
        """
        if kwargs:
            arg_dict = self.arg_dict
            for name, array in kwargs.items():
                if not isinstance(array, (NDArray, np.ndarray)):
                    raise ValueError("only accept keyword argument of NDArrays and numpy.ndarray")
                if name not in arg_dict:
                    raise TypeError(f"Unknown argument {name}")
                if arg_dict[name].shape != tuple(array.shape):
                    raise ValueError(f"Shape not match! Argument {name}, need: {arg_dict[name].shape}, "
                                     f"received: {tuple(array.shape)}")
                arg_dict[name][:] = array
        self._run(self._fwd_segments, self._fwd_ops, bool(is_train))
        return self.outputs

    def backward(self, out_grads=None, is_train: bool = True) -> None:
        """Push the backward pass, writing (or adding to) the gradient arrays.

        ``out_grads`` are the head gradients, one per output; they may be left out only for
        outputs no backward node reads (loss layers such as ``SoftmaxOutput`` or ``MakeLoss``).
        """
        if not self._bwd_ops and not any(r != "null" for r in self._grad_req.values()):
            return
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, (NDArray, np.ndarray)):
            out_grads = [out_grads]
        elif isinstance(out_grads, dict):
            out_grads = [out_grads.get(n) for n in self._symbol.list_outputs()]
        for i, head in enumerate(self._head_grads):
            if head is None:
                continue
            if i >= len(out_grads) or out_grads[i] is None:
                raise MXNetError(
                    "Because the last operator is not Loss function, head_gradient is required when "
                    f"calling backward (output {i}, '{self._symbol.list_outputs()[i]}'). If you are "
                    "attempting to minimize the output as an objective, please modify your network "
                    "and pass it through the make_loss symbol.")
            g = out_grads[i]
            if tuple(g.shape) != head.shape:
                raise MXNetError(f"backward: head gradient {i} has shape {tuple(g.shape)}, output "
                                 f"{i} has shape {head.shape}")
            if isinstance(g, NDArray):
                g.copyto(head)      # one engine push; ``head[:] = g`` takes the general indexing path
            else:
                head[:] = g
        self._run(self._bwd_segments, self._bwd_ops, bool(is_train))

    def _run(self, segments, ops, is_train: bool) -> None:
        ctx = self._ctx
        if self._monitor is None:
            for seg in segments:
                seg.push(ctx, is_train)
            return
        # With a monitor every node runs alone, so each output can be shown right after it is made.
        for op in ops:
            seg = self._single.get(op.nid)
            if seg is None:
                seg = self._single[op.nid] = compile_segments([op], 1, op.op_name)[0]
            if self._monitor_all:
                self._monitor_inputs(op)
            seg.push(ctx, is_train)
            self._monitor_outputs(op)

    # -- monitoring --------------------------------------------------------------------------
    def set_monitor_callback(self, callback: Callable[[str, NDArray], None],
                             monitor_all: bool = False) -> None:
        """Call ``callback(name, array)`` for every node output (and input, with ``monitor_all``).

        Names are ``<node>_<output>`` (``fc1_output``); inputs are ``<node>_<input>``, and a
        variable input is also shown under its own name. The callback runs on the calling thread
        right after the node is pushed, so the array is read through the engine as usual.
        """
        self._monitor = callback
        self._monitor_all = bool(monitor_all)

    @staticmethod
    def _io_names(node, what: str) -> List[str]:
        n = node.num_outputs() if what == "output" else len(node.inputs)
        if node.op.name.startswith("_backward_"):
            return [what] if n == 1 and what == "output" else [f"{what}{i}" for i in range(n)]
        if what == "input" and not getattr(node.op, "monitor_input_names", True):
            return [f"input{i}" for i in range(n)]     # an op MXNet gives no input names
        names = node.op.list_outputs(node.params) if what == "output" else node.op.list_inputs(node.params)
        return list(names) + [f"{what}{i}" for i in range(len(names), n)]

    def _monitor_inputs(self, op) -> None:
        idx = self._plan.idx
        node = idx.nodes[op.nid]
        for e, name in zip(node.inputs, self._io_names(node, "input")):
            arr = self._arrays[idx.entry_id(e)]
            if e.node.is_variable:
                self._monitor(e.node.name, arr)
            self._monitor(f"{node.name}_{name}", arr)

    def _monitor_outputs(self, op) -> None:
        idx = self._plan.idx
        node = idx.nodes[op.nid]
        visible = node.op.num_visible_outputs(node.params)
        for i, name in enumerate(self._io_names(node, "output")[:visible]):
            self._monitor(f"{node.name}_{name}", self._arrays[idx.entry_id(op.nid, i)])

    # -- parameters, reshaping, printing -----------------------------------------------------
    def copy_params_from(self, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray] = None,
                         allow_extra_params: bool = False) -> None:
        """Copy parameter values into the bound arrays (cast to their dtype).

        A name that is not an argument (auxiliary state) raises ``ValueError`` unless
        ``allow_extra_params``.
        """
        for params, target, what in ((arg_params, self.arg_dict, "arguments"),
                                     (aux_params or {}, self.aux_dict, "auxiliary states")):
            for name, array in params.items():
                if name in target:
                    dst = target[name]
                    if isinstance(array, NDArray) and array._dtype != dst._dtype:
                        array = array.astype(dst._dtype)
                    dst[:] = array
                elif not allow_extra_params:
                    raise ValueError(f'Find name "{name}" that is not in the {what}')

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False, **kwargs) -> "Executor":
        """A new executor for new input shapes, sharing this one's arrays and memory pool.

        Arrays whose shape does not change are shared as they are; smaller ones are views of the
        old memory; larger ones are new arrays, allowed only with ``allow_up_sizing``. Arguments
        not named in ``kwargs`` whose shape changes need ``partial_shaping``.
        """
        known = {k: tuple(v) for k, v in kwargs.items()}
        dtypes = {n: a._dtype for n, a in zip(self._arg_names + self._aux_names,
                                                self.arg_arrays + self.aux_arrays)}
        stypes = {n: a.stype for n, a in zip(self._arg_names + self._aux_names,
                                               self.arg_arrays + self.aux_arrays)}
        placement = None
        if self._plan.node_ctx is not None:
            placement = _placement(self._group2ctx, self._ctx, "reshape",
                                   {n: a.context for n, a in zip(self._arg_names + self._aux_names,
                                                                 self.arg_arrays + self.aux_arrays)},
                                   {n: g.context for n, g in zip(self._arg_names, self.grad_arrays)
                                    if g is not None})
        plan = build_graph(self._symbol._outputs, self._grad_req, known, dtypes, "reshape", stypes,
                           placement)

        def remake(name: str, old: Optional[NDArray]) -> Optional[NDArray]:
            if old is None:
                return None
            shape = tuple(plan.input_shape(name))
            if shape == old.shape:
                return old
            if old._sparse:
                return zeros(shape, self._ctx, old._dtype, stype=old.stype)
            if name not in known and not partial_shaping:
                raise MXNetError(f"reshape: the shape of '{name}' changes from {old.shape} to {shape}; "
                                 "pass partial_shaping=True to allow a change of an unspecified input")
            if int(np.prod(shape)) > old.size:
                if not allow_up_sizing:
                    raise MXNetError(f"reshape: new shape of '{name}' {shape} is larger than the original "
                                     f"{old.shape}; set allow_up_sizing=True to allow it")
                return _empty(shape, old.context, old._dtype)
            return old._view(shape, old._offset)

        args = [remake(n, a) for n, a in zip(self._arg_names, self.arg_arrays)]
        grads = [remake(n, g) for n, g in zip(self._arg_names, self.grad_arrays)]
        aux = [remake(n, a) for n, a in zip(self._aux_names, self.aux_arrays)]
        return Executor(self._symbol, self._ctx, plan, args, grads, aux, self._grad_req,
                        self._group2ctx, self._pool)

    def get_optimized_symbol(self) -> Symbol:
        """The forward graph as bound, after the executor's passes (common subexpressions merged
        unless ``MXNET_ELIMINATE_COMMON_EXPR=0``)."""
        return Symbol(self._plan.graph.outputs[:self._plan.num_forward_outputs])

    def debug_str(self) -> str:
        """The bound graph (forward and backward nodes) in nnvm's format, ending with MXNet's
        ``Total N MB allocated`` line (planned intermediate entries only, as MXNet counts).

        A graph placed on several devices (``group2ctx``) shows each operator's device on its
        ``Op:`` line and, before the total, one ``<device>: N MB allocated`` line per device.
        """
        text = Symbol(self._plan.graph.outputs).debug_str()
        if self._plan.node_ctx is not None:
            text = placed_debug_str(self._plan.graph, text)
        return text + debug_str_footer(self._plan.graph)


# ---------------------------------------------------------------------------------------------
# bind / simple_bind
# ---------------------------------------------------------------------------------------------

def _input_names(symbol, what: str):
    """Argument and auxiliary-state names; two inputs with one name cannot be told apart."""
    arg_names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
    names = arg_names + aux_names
    if len(set(names)) != len(names):
        dups = sorted({n for n in names if names.count(n) > 1})
        raise MXNetError(f"{what}: the symbol has several inputs named {dups}; give them distinct names")
    return arg_names, aux_names


def _grad_req_dict(grad_req, arg_names: List[str]) -> Dict[str, str]:
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise MXNetError(f"grad_req: {len(grad_req)} values for {len(arg_names)} arguments {arg_names}")
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):
        # As MXNet: names that are not arguments are ignored (one dict can serve several graphs,
        # e.g. a fused RNN's 'parameters' and its unfused twin), the unnamed arguments get 'null'.
        reqs = {n: grad_req.get(n, "null") for n in arg_names}
    else:
        raise MXNetError(f"grad_req must be a str, list or dict, got {type(grad_req).__name__}")
    for name, req in reqs.items():
        if req not in _REQS:
            raise MXNetError(f"grad_req of '{name}' must be one of {_REQS[:3]}, got {req!r}")
        if req == "inplace":
            reqs[name] = "write"
    return reqs


def _arrays_in(what: str, given, names: List[str], allow_missing: bool) -> List[Optional[NDArray]]:
    """MXNet's ``_get_ndarray_inputs``: a list in ``names`` order from a list or dict."""
    if isinstance(given, (list, tuple)):
        if len(given) != len(names):
            raise ValueError(f"Length of {what} does not match the number of arguments "
                             f"({len(given)} given for {names})")
        out = list(given)
    elif isinstance(given, dict):
        out = []
        for name in names:
            if name in given:
                out.append(given[name])
            elif allow_missing:
                out.append(None)
            else:
                raise ValueError(f"key `{name}` is missing in `{what}`")
    else:
        raise TypeError("Only accept list of NDArrays or dict of str to NDArray")
    for name, arr in zip(names, out):
        if arr is None and allow_missing:
            continue
        if not isinstance(arr, NDArray):
            raise TypeError(f"Only accept list of NDArrays or dict of str to NDArray ({what} '{name}' "
                            f"is a {type(arr).__name__})")
    return out


def _check_ctx(ctx, arrays, names, what: str) -> None:
    for name, arr in zip(names, arrays):
        if arr is not None and arr.context != ctx:
            raise MXNetError(f"bind: {what} '{name}' is on {arr.context}, the executor on {ctx}")


def _placement(group2ctx, ctx, caller: str, input_ctx=None, grad_ctx=None) -> Optional[dict]:
    """Keyword arguments of the ``place_device`` pass, or ``None`` when no ``group2ctx`` is given
    (the whole graph runs on ``ctx``, as before placement existed)."""
    groups = check_group2ctx(group2ctx, caller)
    if not groups:
        return None
    return {"group2ctx": groups, "default_ctx": ctx, "input_ctx": input_ctx or {},
            "grad_ctx": grad_ctx or {}}


def bind(symbol, ctx: Context, args, args_grad=None, grad_req: Union[str, list, dict] = "write",
         aux_states=None, group2ctx=None, shared_exec: Optional[Executor] = None) -> Executor:
    """Bind ``symbol`` to given arrays (MXNet's ``Symbol.bind``).

    Parameters
    ----------
    args : list or dict of NDArray
        One array per argument (``symbol.list_arguments()``), all on ``ctx``.
    args_grad : list or dict of NDArray, optional
        Gradient arrays; arguments without one get ``grad_req='null'``.
    grad_req : str, list or dict
        'write', 'add' or 'null', for all arguments or per argument (missing dict keys: 'null').
    aux_states : list or dict of NDArray, optional
        One array per auxiliary state.
    group2ctx : dict of str to Context, optional
        Model parallelism: nodes made under ``mx.AttrScope(ctx_group=g)`` run on ``group2ctx[g]``,
        the others on ``ctx``; the arrays may then live on any device (each variable stays where
        its array is) and ``_CrossDeviceCopy`` nodes move what crosses (``passes/place_device``).
    shared_exec : Executor, optional
        Reuse that executor's memory pool for intermediate results.
    """
    arg_names, aux_names = _input_names(symbol, "bind")
    arg_arrays = _arrays_in("args", args, arg_names, False)
    if args_grad is None:
        grad_arrays = [None] * len(arg_names)
    else:
        grad_arrays = _arrays_in("args_grad", args_grad, arg_names, True)
    aux_arrays = _arrays_in("aux_states", [] if aux_states is None else aux_states, aux_names, False)
    reqs = _grad_req_dict(grad_req, arg_names)
    for i, name in enumerate(arg_names):
        if grad_arrays[i] is None:
            reqs[name] = "null"
        elif reqs[name] == "null":
            grad_arrays[i] = None
        elif grad_arrays[i].shape != arg_arrays[i].shape:
            raise MXNetError(f"bind: gradient array of '{name}' has shape {grad_arrays[i].shape}, the "
                             f"argument {arg_arrays[i].shape}")
    names = arg_names + aux_names
    arrays = arg_arrays + aux_arrays
    # With group2ctx, arrays may live on any device: each variable lives where its array is, and
    # the placement pass copies what a node on another device reads.
    placement = _placement(group2ctx, ctx, "bind", {n: a.context for n, a in zip(names, arrays)},
                           {n: g.context for n, g in zip(arg_names, grad_arrays) if g is not None})
    if placement is None:
        _check_ctx(ctx, arg_arrays, arg_names, "argument")
        _check_ctx(ctx, grad_arrays, arg_names, "gradient of")
        _check_ctx(ctx, aux_arrays, aux_names, "auxiliary state")
    plan = build_graph(symbol._outputs, reqs, {n: a.shape for n, a in zip(names, arrays)},
                       {n: a._dtype for n, a in zip(names, arrays)}, "bind",
                       {n: a.stype for n, a in zip(names, arrays)}, placement)
    for name, arr in zip(names, arrays):
        want = tuple(plan.input_shape(name))
        if want != arr.shape:
            raise MXNetError(f"bind: array of '{name}' has shape {arr.shape}, the graph needs {want}")
    pool = shared_exec._pool if shared_exec is not None else None
    return Executor(symbol, ctx, plan, arg_arrays, grad_arrays, aux_arrays, reqs, group2ctx, pool)


def _default_dtypes(symbol, arg_names: List[str], type_dict: Optional[dict]) -> Dict[str, np.dtype]:
    """MXNet's rule: arguments without a given type or a ``__dtype__`` attribute are float32."""
    if type_dict is None:
        attrs = symbol.attr_dict()
        return {n: np.dtype(np.float32) for n in arg_names if "__dtype__" not in attrs.get(n, {})}
    out = {}
    for name, dt in type_dict.items():
        if isinstance(dt, (int, np.integer)) and not isinstance(dt, bool) and int(dt) in DTYPE_MX_TO_NP:
            dt = DTYPE_MX_TO_NP[int(dt)]
        out[name] = normalize_dtype(dt, f"type_dict['{name}']")
    return out


def _shared_or_new(name, shape, dtype, ctx, shared_buffer) -> NDArray:
    """An argument array from ``shared_buffer`` (a view if it is large enough), else a new one."""
    if shared_buffer is not None and name in shared_buffer:
        buf = shared_buffer[name]
        if buf._dtype == dtype and buf.size >= int(np.prod(shape)) and buf.context == ctx:
            return buf._view(tuple(shape), buf._offset)
    arr = zeros(shape, ctx, dtype)
    if shared_buffer is not None:
        shared_buffer[name] = arr
    return arr


def simple_bind(symbol, ctx: Context, grad_req: Union[str, list, dict] = "write", type_dict=None,
                stype_dict=None, group2ctx=None, shared_arg_names: Optional[List[str]] = None,
                shared_exec: Optional[Executor] = None, shared_buffer: Optional[dict] = None,
                **kwargs) -> Executor:
    """Infer every shape from the given input shapes, allocate zero-filled arrays and bind.

    ``kwargs`` map input names to shapes (``data=(128, 784)``); ``type_dict`` gives dtypes
    (default float32). Gradient arrays are made for every argument whose ``grad_req`` (default
    'write', as in MXNet) is not 'null'.

    With ``group2ctx`` (see ``bind``) each argument, gradient and auxiliary state is made on the
    device of the nodes reading it (its own group's, if it has one).

    For bucketing, ``shared_exec`` lends its memory pool, its auxiliary states and the arrays of
    the arguments named in ``shared_arg_names``; ``shared_buffer`` (name to NDArray, updated in
    place) supplies the other argument arrays where large enough.
    """
    arg_names, aux_names = _input_names(symbol, "simple_bind")
    # MXNet reads only the tuple values as shapes and passes over the rest (sym.take's tests hand
    # simple_bind the operator's own axis=..., mode=...)
    kwargs = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
    for key in kwargs:
        if key not in arg_names and key not in aux_names:
            raise MXNetError(f"simple_bind: keyword argument '{key}' is not an input; inputs are "
                             f"{arg_names + aux_names}")
    shapes = {}
    for key, shape in kwargs.items():
        if not isinstance(shape, (tuple, list)) or not all(isinstance(d, (int, np.integer)) for d in shape):
            raise MXNetError(f"simple_bind: the shape of '{key}' must be a tuple of ints, got {shape!r}")
        shapes[key] = tuple(int(d) for d in shape)
    reqs = _grad_req_dict(grad_req, arg_names)
    placement = _placement(group2ctx, ctx, "simple_bind")
    if placement is not None and shared_exec is not None:
        placement["input_ctx"] = {n: a.context for n, a in shared_exec.arg_dict.items()
                                  if n in set(shared_arg_names or ())}
        placement["input_ctx"].update((n, a.context) for n, a in shared_exec.aux_dict.items())
    plan = build_graph(symbol._outputs, reqs, shapes, _default_dtypes(symbol, arg_names, type_dict),
                       "simple_bind", stype_dict, placement)
    shared_names = set(shared_arg_names or ())
    arg_arrays, grad_arrays, aux_arrays = [], [], []
    for name in arg_names:
        shape, dtype = tuple(plan.input_shape(name)), np.dtype(plan.input_dtype(name))
        if shared_exec is not None and name in shared_names:
            arr, grad = shared_exec.arg_dict[name], shared_exec.grad_dict.get(name)
            if arr.shape != shape:
                raise MXNetError(f"simple_bind: shared argument '{name}' has shape {arr.shape}, "
                                 f"this graph needs {shape}")
        elif plan.input_stype(name) != "default":     # sparse: never a view of a shared buffer
            arr, grad = zeros(shape, plan.input_ctx(name, ctx), dtype, stype=plan.input_stype(name)), None
        elif name in shared_names:     # a parameter: its own array, never in the data buffer
            arr, grad = zeros(shape, plan.input_ctx(name, ctx), dtype), None
        else:
            # Data and labels come from (and go into) the buffer, their gradients under
            # "grad of <name>", as MXNet's graph executor keys them.
            arr = _shared_or_new(name, shape, dtype, plan.input_ctx(name, ctx), shared_buffer)
            grad = None
            if reqs[name] != "null" and plan.stype(plan.grad_eids[name]) == "default":
                grad = _shared_or_new(f"grad of {name}", shape, dtype, plan.input_ctx(name, ctx),
                                      shared_buffer)
        if reqs[name] != "null" and grad is None:
            # The gradient's stype is what the graph computes (row_sparse for dot(csr, w)'s w).
            grad = zeros(shape, plan.input_ctx(name, ctx), dtype, stype=plan.stype(plan.grad_eids[name]))
        arg_arrays.append(arr)
        grad_arrays.append(grad if reqs[name] != "null" else None)
    for name in aux_names:
        shape, dtype = tuple(plan.input_shape(name)), np.dtype(plan.input_dtype(name))
        if shared_exec is not None:
            arr = shared_exec.aux_dict[name]
            if arr.shape != shape:
                raise MXNetError(f"simple_bind: shared auxiliary state '{name}' has shape {arr.shape}, "
                                 f"this graph needs {shape}")
        else:
            arr = zeros(shape, plan.input_ctx(name, ctx), dtype)
        aux_arrays.append(arr)
    pool = shared_exec._pool if shared_exec is not None else None
    return Executor(symbol, ctx, plan, arg_arrays, grad_arrays, aux_arrays, reqs, group2ctx, pool)
