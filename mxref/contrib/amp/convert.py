"""AMP for inference: ``convert_symbol`` (MXNet's ``ReducePrecision`` pass: ``amp_cast`` /
``amp_multicast`` nodes put into a copy of a float32 graph by AMP's operator lists),
``convert_model``, ``convert_hybrid_block`` and ``convert_bucketing_module``."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from ...base import DTYPE_MX_TO_NP, DTYPE_NP_TO_MX, MXNetError
from ...gluon import SymbolBlock
from ...graph import Node, NodeEntry, make_node, topo_sort
from ...symbol import Symbol
from .amp import (
    _F32,
    _target,
    list_conditional_fp32_ops,
    list_fp32_ops,
    list_lp16_fp32_ops,
    list_lp16_ops,
    list_widest_type_cast,
)

__all__ = ["convert_symbol", "convert_model", "convert_hybrid_block", "convert_bucketing_module"]


# -- convert_symbol: the ReducePrecision graph pass ----------------------------------------------
# The operators MXNet 1.9.1 registers output names for (FListOutputNames: the nn layers and the
# legacy OperatorProperty ops). ReducePrecision names a cast of their output ``<node>_<output
# name>_amp_cast_<dtype>`` and of any other operator's ``<node>_<index>_amp_cast_<dtype>``; the
# set was checked against MXNet's pass one operator at a time.
_NAMED_OUTPUTS = frozenset([
    "Activation", "BatchNorm", "BatchNorm_v1", "BilinearSampler", "Concat", "Convolution",
    "Correlation", "Crop", "Custom", "Deconvolution", "Dropout", "FullyConnected", "GridGenerator",
    "GroupNorm", "IdentityAttachKLSparseReg", "InstanceNorm", "L2Normalization", "LRN", "LayerNorm",
    "LeakyReLU", "MakeLoss", "Pad", "Pooling", "RNN", "ROIPooling", "SVMOutput", "SequenceLast",
    "SequenceMask", "SequenceReverse", "SliceChannel", "SoftmaxActivation", "SoftmaxOutput",
    "SpatialTransformer", "SwapAxis", "UpSampling", "_CrossDeviceCopy", "_contrib_DeformableConvolution",
    "_contrib_DeformablePSROIPooling", "_contrib_MultiBoxDetection", "_contrib_MultiBoxPrior",
    "_contrib_MultiBoxTarget", "_contrib_MultiProposal", "_contrib_PSROIPooling", "_contrib_Proposal",
    "_contrib_ROIAlign", "_contrib_RROIAlign", "_contrib_SyncBatchNorm", "_contrib_count_sketch",
    "_contrib_fft", "_contrib_hawkesll", "_contrib_ifft", "_contrib_index_array",
    "_contrib_interleaved_matmul_encdec_qk", "_contrib_interleaved_matmul_encdec_valatt",
    "_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_selfatt_valatt",
    "col2im", "elemwise_add", "im2col", "make_loss", "softmax", "softmin"])


def _suffix(e: NodeEntry) -> str:
    if e.node.is_variable:
        return ""
    if e.node.op.name not in _NAMED_OUTPUTS:
        return f"_{e.index}"
    names = e.node.op.list_outputs(e.node.params)
    return "_" + (names[e.index] if e.index < len(names) else str(e.index))


class _Rewriter:
    """One walk over the graph in topological order, copying each node and casting its inputs.

    ``typed[dtype]`` maps an original entry to the copy's entry known to hold ``dtype``; a cast
    made once is reused by every consumer.
    """

    def __init__(self, target: np.dtype, lp16, fp32, widest, cond, excluded, data_names,
                 cast_optional_params):
        self.target, self.tname = target, np.dtype(target).name
        self.lp16, self.fp32, self.widest = set(lp16), set(fp32), set(widest)
        self.cond = {}
        for name, arg, values in cond:
            self.cond.setdefault(name, {})[arg] = list(values)
        self.excluded, self.data_names = set(excluded), set(data_names)
        self.cast_optional = cast_optional_params
        self.mirror: Dict[int, Node] = {}
        self.optional = set()      # parameters kept uncast in front of low-precision operators
        self.typed: Dict[str, Dict[Tuple[int, int], NodeEntry]] = {"float32": {}, self.tname: {}}

    def copy_of(self, e: NodeEntry) -> NodeEntry:
        return NodeEntry(self.mirror[id(e.node)], e.index, e.version)

    def cast(self, e: NodeEntry, dtype: str) -> NodeEntry:
        key = (id(e.node), e.index)
        if key not in self.typed[dtype]:
            node = make_node("amp_cast", [self.copy_of(e)],
                             f"{e.node.name}{_suffix(e)}_amp_cast_{dtype}", attrs={"dtype": dtype})
            self.typed[dtype][key] = NodeEntry(node, 0, 0)
        return self.typed[dtype][key]

    def known(self, e: NodeEntry, dtype: str) -> Optional[NodeEntry]:
        return self.typed[dtype].get((id(e.node), e.index))

    def mark(self, node: Node, new: Node, dtypes) -> None:
        for i, t in enumerate(dtypes):
            if t in self.typed:
                self.typed[t][(id(node), i)] = NodeEntry(new, i, 0)

    def _types(self, node: Node, first) -> Tuple[list, list]:
        if node.op.infer_type is None:
            return [None] * len(node.inputs), [None] * node.num_outputs()
        try:
            ins, outs = node.op.infer_type(node.params, [first] + [None] * (len(node.inputs) - 1))
        except Exception:         # NOTE: an op that cannot type from its first input alone
            return [None] * len(node.inputs), [None] * node.num_outputs()
        return list(ins), list(outs)

    def _is_cond_fp32(self, node: Node) -> bool:
        for arg, values in self.cond.get(node.op.name, {}).items():
            if arg in node.attrs and node.attrs[arg] in values:
                return True
        return False

    def visit(self, node: Node) -> None:
        new = Node(node.op, node.name, node.attrs, (),
                   [self.mirror.get(id(c), c) for c in node.control_deps])
        new.subgraphs, new._params = list(node.subgraphs), node._params
        self.mirror[id(node)] = new
        if node.is_variable:
            return
        op, mutable = node.op.name, set(node.op.mutate_inputs(node.params)) | set(
            range(len(node.op.list_arguments(node.params)), len(node.inputs)))
        if op in self.fp32 or node.name in self.excluded or self._is_cond_fp32(node):
            self.mark(node, new, ["float32"] * node.num_outputs())
            keep = (lambda i, e: e.node.is_variable) if op in self.fp32 or node.name in self.excluded \
                else (lambda i, e: i in mutable)
            new.inputs = [self.known(e, "float32") or
                          (self.copy_of(e) if keep(i, e) else self.cast(e, "float32"))
                          for i, e in enumerate(node.inputs)]
        elif op in self.lp16:
            ins, outs = self._types(node, self.target)
            self.mark(node, new, [t.name if t is not None else None for t in outs])
            for i, e in enumerate(node.inputs):
                if self.known(e, self.tname):
                    new.inputs.append(self.known(e, self.tname))
                elif (self.cast_optional and e.node.is_variable and e.node.name not in self.data_names) \
                        or i in mutable or not (ins[i] is None or ins[i] == self.target):
                    new.inputs.append(self.copy_of(e))
                    if self.cast_optional and e.node.is_variable:
                        self.typed[self.tname][(id(e.node), e.index)] = self.copy_of(e)
                        self.optional.add(e.node.name)
                else:
                    new.inputs.append(self.cast(e, self.tname))
        elif op in self.widest and node.inputs:
            self._widest(node, new)
        else:
            first = node.inputs[0] if node.inputs else None
            in_t = None if first is None else (self.target if self.known(first, self.tname) else
                                               _F32 if self.known(first, "float32") else None)
            if in_t is not None:
                _, outs = self._types(node, in_t)
                self.mark(node, new, [t.name if t is not None else None for t in outs])
            new.inputs = [self.copy_of(e) for e in node.inputs]

    def _widest(self, node: Node, new: Node) -> None:
        kinds = [self.tname if self.known(e, self.tname) else "float32" if self.known(e, "float32")
                 else None for e in node.inputs]
        if None in kinds:
            first = node.inputs[0]
            multi = make_node("amp_multicast", [self.copy_of(e) for e in node.inputs],
                              f"{first.node.name}{_suffix(first)}_amp_multicast",
                              attrs={"num_outputs": str(len(node.inputs))})
            new.inputs = [NodeEntry(multi, i, 0) for i in range(len(node.inputs))]
            return
        out = "float32" if "float32" in kinds else self.tname
        self.mark(node, new, [out] * node.num_outputs())
        new.inputs = [self.known(e, out) or self.cast(e, out) for e in node.inputs]


def convert_symbol(sym: Symbol, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                   conditional_fp32_ops=None, excluded_sym_names=None, data_names=None,
                   cast_optional_params: bool = False) -> Symbol:
    """A copy of float32 graph ``sym`` with ``amp_cast``/``amp_multicast`` nodes inserted.

    Inputs of ``target_dtype_ops`` are cast to ``target_dtype``, inputs of ``fp32_ops`` (and of
    ``conditional_fp32_ops`` with a listed parameter value, and of nodes named in
    ``excluded_sym_names``) to float32, and inputs of the widest-type operators to a common type.
    Every graph output is float32. ``data_names`` are the inputs fed as float32 (by default the
    inputs without a ``__dtype__``); with ``cast_optional_params`` the parameters that feed only
    low-precision operators are stored in ``target_dtype`` instead of being cast. Each input
    variable gets the ``__dtype__`` inferred for it.
    """
    if not isinstance(sym, Symbol):
        raise TypeError("First argument to convert_symbol should be Symbol")
    target = _target(target_dtype)
    lp16 = list_lp16_ops(target) if target_dtype_ops is None else list(target_dtype_ops)
    fp32 = list_fp32_ops(target) if fp32_ops is None else list(fp32_ops)
    cond = list_conditional_fp32_ops(target) if conditional_fp32_ops is None else list(conditional_fp32_ops)
    cond_names = [c[0] for c in cond]
    for a, b, what in ((lp16, fp32, "target_dtype_ops and fp32_ops"),
                       (lp16, cond_names, "target_dtype_ops and conditional_fp32_ops"),
                       (cond_names, fp32, "fp32_ops and conditional_fp32_ops")):
        common = set(a) & set(b)
        if common:
            raise MXNetError(f"amp.convert_symbol: ops cannot be in two lists; common ops in {what}: "
                             f"{sorted(common)}")
    allowed = set(list_lp16_ops(target) + list_fp32_ops(target) + list_lp16_fp32_ops(target)) | \
        {c[0] for c in list_conditional_fp32_ops(target)}
    illegal = set(lp16 + fp32 + cond_names) - allowed
    if illegal:
        raise MXNetError(f"amp.convert_symbol: ops {sorted(illegal)} are in none of amp's lists "
                         "(list_lp16_ops, list_fp32_ops, list_lp16_fp32_ops, list_conditional_fp32_ops)")
    attrs = sym.attr_dict()
    if data_names is None:
        data_names = [n for n in sym.list_inputs() if "__dtype__" not in attrs.get(n, {})]
    rw = _Rewriter(target, lp16, fp32, list_widest_type_cast(target), cond,
                   excluded_sym_names or [], data_names, cast_optional_params)
    for node in topo_sort(list(sym._outputs)):
        rw.visit(node)
    outputs = [rw.known(e, "float32") or rw.cast(e, "float32") for e in sym._outputs]
    out = Symbol(outputs)
    _set_input_dtypes(out, data_names, rw.optional, target)
    return out


def _set_input_dtypes(sym: Symbol, data_names, optional, target: np.dtype) -> None:
    """``__dtype__`` of every model parameter (input not in ``data_names``) and of every input
    that had one: the type inferred with the data in float32 (float32 where it stays unknown)."""
    known = {n: np.float32 for n in data_names if n in sym.list_inputs()}
    known.update({n: target for n in optional})
    try:
        args, _, aux = sym.infer_type_partial(**known)
        inferred = dict(zip(sym.list_arguments() + sym.list_auxiliary_states(), list(args) + list(aux)))
    except MXNetError:
        # NOTE: user lists can feed an operator a dtype mix it refuses; the graph is still
        # returned, its parameters typed float32 as unknown types are.
        inferred = {}
    for node in topo_sort(list(sym._outputs)):
        if node.is_variable and (node.name not in data_names or "__dtype__" in node.attrs):
            dtype = np.dtype(inferred.get(node.name) or np.float32)
            node.attrs["__dtype__"] = str(DTYPE_NP_TO_MX[dtype])


def convert_model(sym: Symbol, arg_params: dict, aux_params: dict, target_dtype="float16",
                  target_dtype_ops=None, fp32_ops=None, conditional_fp32_ops=None,
                  excluded_sym_names=None, cast_optional_params: bool = False):
    """``convert_symbol`` for a model, plus its parameters cast to the dtypes the new graph gives
    them; returns ``(sym, arg_params, aux_params)``."""
    if excluded_sym_names is not None and not isinstance(excluded_sym_names, list):
        raise ValueError("excluded_sym_names must be a list of strings representing the names of the "
                         "symbols that should not be casted, while received type "
                         f"{type(excluded_sym_names)}")
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise TypeError("convert_model: arg_params and aux_params must be dicts of name to NDArray")
    param_names = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in param_names]
    sym = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                         excluded_sym_names, data_names, cast_optional_params)
    attrs = sym.attr_dict()
    for params, names in ((arg_params, sym.list_arguments()), (aux_params, sym.list_auxiliary_states())):
        for name in names:
            code = attrs.get(name, {}).get("__dtype__", "-1")
            if name in params and code != "-1":
                params[name] = params[name].astype(DTYPE_MX_TO_NP[int(code)])
    return sym, arg_params, aux_params


def convert_hybrid_block(block, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None,
                         cast_optional_params: bool = False):
    """A ``SymbolBlock`` running ``convert_symbol`` of a hybridized block's graph, with the
    block's parameters (cast where the new graph stores them in low precision)."""
    if not getattr(block, "_cached_graph", None):
        raise MXNetError("convert_hybrid_block: call block.hybridize() and run it forward once first")
    inputs, out = block._cached_graph
    params = {p.name: p.data() for p in block.collect_params().values()}
    arg_names, aux_names = set(out.list_arguments()), set(out.list_auxiliary_states())
    sym, args, aux = convert_model(out, {k: v for k, v in params.items() if k in arg_names},
                                   {k: v for k, v in params.items() if k in aux_names},
                                   target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                                   excluded_sym_names, cast_optional_params)
    inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    ret = SymbolBlock(sym, list(inputs))
    for name, p in ret.collect_params().items():
        value = args.get(name, aux.get(name))
        if value is not None:
            p.cast(value.dtype)
            p._load_init(value, ctx, cast_dtype=True, dtype_source="saved")
    return ret


# -- convert_bucketing_module -------------------------------------------------------------------
def _check_param_dtypes(sym: Symbol, arg_params: dict, aux_params: dict, key) -> None:
    """The parameters are shared by every bucket, so each bucket's graph must store a parameter
    in the dtype the converted parameters have (``cast_optional_params`` could differ when one
    bucket feeds a parameter to a float32 operator that another bucket does not use)."""
    attrs = sym.attr_dict()
    for name in sym.list_inputs():
        value = arg_params.get(name, aux_params.get(name))
        code = attrs.get(name, {}).get("__dtype__", "-1")
        if value is not None and code != "-1" and np.dtype(DTYPE_MX_TO_NP[int(code)]) != value.dtype:
            raise MXNetError(f"amp.convert_bucketing_module: bucket {key!r} stores parameter {name!r} "
                             f"as {np.dtype(DTYPE_MX_TO_NP[int(code)]).name} but the shared "
                             f"parameters hold it as {np.dtype(value.dtype).name}; convert without "
                             "cast_optional_params")


def convert_bucketing_module(bucketing_mod, target_dtype="float16", target_dtype_ops=None,
                             fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                             cast_optional_params: bool = False):
    """A new ``BucketingModule`` whose every bucket runs ``convert_model`` of the original
    bucket's symbol, with the trained parameters cast as ``convert_model`` casts them.

    ``bucketing_mod`` must have been bound (so that it has buckets) and have its parameters
    initialized, or come from ``BucketingModule.load``. Its ``sym_gen`` is wrapped: a bucket key met
    later (one never bound before the conversion) is converted the same way when the new module
    first switches to it (MXNet's result keeps the original ``sym_gen``, so there such a bucket
    runs in float32). As in MXNet, the result is returned unbound, with the parameters loaded:
    call ``bind(...)`` with the shapes (and ``for_training``) to predict with, then
    ``forward``/``score``; the context, ``fixed_param_names``, ``state_names``, ``work_load_list``,
    ``group2ctxs`` and ``compression_params`` are those of ``bucketing_mod``. The arguments are
    ``convert_model``'s.
    """
    from ...module import BucketingModule

    # MXNet's checks, with its messages (it asserts; these are raised so that ``python -O``
    # keeps them).
    if not isinstance(bucketing_mod, BucketingModule):
        raise AssertionError("module should be instance of bucketing module")
    # A module from BucketingModule.load, not bound yet, holds its parameters aside; MXNet's
    # load makes (unbound) buckets from the saved symbols, so it converts too.
    loaded = None if bucketing_mod.binded else bucketing_mod._preloaded
    if len(bucketing_mod._buckets) == 0 and loaded is None:
        raise AssertionError("Bucketing Module should not be empty")
    if not bucketing_mod.params_initialized:
        raise AssertionError("bucketing_mod params should be initialized for mixed precision conversion")
    options = dict(target_dtype=target_dtype, target_dtype_ops=target_dtype_ops, fp32_ops=fp32_ops,
                   conditional_fp32_ops=conditional_fp32_ops, excluded_sym_names=excluded_sym_names,
                   cast_optional_params=cast_optional_params)
    if loaded is None:
        arg_fp32, aux_fp32 = bucketing_mod.get_params()
        symbols = {key: mod.symbol for key, mod in bucketing_mod._buckets.items()}
    else:
        arg_fp32, aux_fp32 = loaded
        key = bucketing_mod._default_bucket_key
        symbols = {key: bucketing_mod._call_sym_gen(key)[0]}
    arg_params, aux_params = {}, {}
    for key, sym in symbols.items():
        sym, args, aux = convert_model(sym, dict(arg_fp32), dict(aux_fp32), **options)
        _check_param_dtypes(sym, arg_params, aux_params, key)
        arg_params.update(args)
        aux_params.update(aux)
    original = bucketing_mod._sym_gen

    def sym_gen(bucket_key):
        sym, data_names, label_names = original(bucket_key)
        # convert_model types the parameters from the float32 values; only the graph is kept.
        sym, _, _ = convert_model(sym, dict(arg_fp32), dict(aux_fp32), **options)
        _check_param_dtypes(sym, arg_params, aux_params, bucket_key)
        return sym, data_names, label_names

    result = BucketingModule(sym_gen, bucketing_mod._default_bucket_key, logger=bucketing_mod.logger,
                             context=bucketing_mod._context, work_load_list=bucketing_mod._work_load_list,
                             fixed_param_names=bucketing_mod._fixed_param_names,
                             state_names=bucketing_mod._state_names, group2ctxs=bucketing_mod._group2ctxs,
                             compression_params=bucketing_mod._compression_params)
    # What BucketingModule.load leaves: parameters set into the modules when bind() makes them.
    result._preloaded = (arg_params, aux_params)
    result.params_initialized = True
    return result
