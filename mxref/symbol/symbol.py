"""``Symbol``: a thin handle on a list of graph output entries, with MXNet 1.x's whole Python API.

A Symbol owns no data: it names some outputs (``NodeEntry``) of a graph of ``Node`` objects
(``graph.py``). Composition builds new nodes; ``__call__`` copies the graph first, so a symbol is
never changed under a user who still holds it.
"""
from __future__ import annotations

import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import (
    attribute,
    passes,  # noqa: F401 - registers the passes infer_shape/infer_type run
)
from ..base import DTYPE_NP_TO_MX, MXNetError, NotImplementedForSymbol, normalize_dtype
from ..graph import Graph, Node, NodeEntry, apply_pass, copy_graph, topo_sort
from ..util import is_np_shape
from . import json_format

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json"]

_STORAGE_TYPES = {"default": 0, "row_sparse": 1, "csr": 2}


def _visible_attrs(attrs: Dict[str, str]) -> Dict[str, str]:
    """``list_attr``'s view: hidden keys are also shown without underscores (``lr_mult``)."""
    out = {}
    for key, value in attrs.items():
        out[key] = value
        plain = key[2:-2]
        if key.startswith("__") and key.endswith("__") and plain in attribute.HIDDEN_KEYS:
            out[plain] = value
    return out


class Symbol:
    """Symbolic outputs of a computation graph (MXNet's ``mx.sym.Symbol``).

    Examples
    --------
    >>> data = mx.sym.Variable('data')
    >>> net = mx.sym.FullyConnected(data, num_hidden=10, name='fc1')
    >>> net.list_arguments()
    ['data', 'fc1_weight', 'fc1_bias']
    >>> net.infer_shape(data=(4, 5))[0]
    [(4, 5), (10, 5), (10,)]
    """

    __hash__ = None  # ``==`` builds a graph node, so symbols cannot be dictionary keys

    def __init__(self, outputs: Sequence[NodeEntry]):
        self._outputs: List[NodeEntry] = list(outputs)

    # -- identity ------------------------------------------------------------------------------
    @property
    def name(self) -> Optional[str]:
        """The node's name, or ``None`` for a group whose outputs come from several nodes."""
        first = self._outputs[0].node if self._outputs else None
        if first is None or any(e.node is not first for e in self._outputs):
            return None
        return first.name

    def __repr__(self) -> str:
        if self.name is None:
            return f"<{type(self).__name__} group [{', '.join(s.name for s in self)}]>"
        return f"<{type(self).__name__} {self.name}>"

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index):
        """One output by position or by name (``'fc1_output'``), or a slice of outputs."""
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if isinstance(index, str):
            matches = [i for i, n in enumerate(self.list_outputs()) if n == index]
            if len(matches) != 1:
                raise ValueError(f'Cannot find output that matches name "{index}"' if not matches
                                 else f'There are multiple outputs with name "{index}"')
            index = matches[0]
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"Symbol index must be an int, a str or a slice, got {type(index).__name__}")
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f"Symbol has {len(self._outputs)} outputs, index {index} is out of range")
        return Symbol([self._outputs[index]])

    def __copy__(self) -> "Symbol":
        return Symbol(copy_graph(self._outputs))

    def __deepcopy__(self, memo) -> "Symbol":
        return Symbol(copy_graph(self._outputs))

    def copy(self) -> "Symbol":
        return self.__copy__()

    def __getstate__(self):
        return {"handle": self.tojson()}

    def __setstate__(self, state):
        self._outputs = json_format.from_json(state["handle"])

    def __bool__(self):
        # An MXNetError subclass, so callers catching MXNetError still do.
        raise NotImplementedForSymbol(self.__bool__, "bool")

    # -- attributes ----------------------------------------------------------------------------
    def _single_node(self, what: str) -> Node:
        if self.name is None:
            raise MXNetError(f"Symbol.{what} only works for non-grouped symbols")
        return self._outputs[0].node

    def attr(self, key: str) -> Optional[str]:
        """Attribute ``key`` of this (single-node) symbol, or ``None``; ``attr('lr_mult')`` works."""
        if self.name is None:
            return None
        return self._outputs[0].node.attrs.get(attribute.hide_key(key))

    def list_attr(self, recursive: bool = False) -> Dict[str, str]:
        """The attributes of this symbol's node (not of its inputs; see ``attr_dict``)."""
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been deprecated. "
                                     "Please use attr_dict instead.")
        if self.name is None:
            return {}
        return _visible_attrs(self._outputs[0].node.attrs)

    def attr_dict(self) -> Dict[str, Dict[str, str]]:
        """``{node name: attributes}`` for every node of the graph that has attributes."""
        return {n.name: _visible_attrs(n.attrs) for n in topo_sort(self._outputs) if n.attrs}

    def _set_attr(self, **kwargs: str) -> None:
        """Set attributes of this (single-node) symbol; op parameters are re-validated."""
        node = self._single_node("_set_attr")
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"Set Attr only accepts string values (got {key}={value!r})")
        old = dict(node.attrs)
        node.attrs.update({attribute.hide_key(k): v for k, v in kwargs.items()})
        if node.op is not None:
            node._params = None
            try:
                node.params  # noqa: B018 - parsing is the validation
            except MXNetError:
                node.attrs, node._params = old, None
                raise

    # -- structure -----------------------------------------------------------------------------
    def _variables(self, kind: str) -> List[Node]:
        """Variable nodes in topological order: ``all``, ``args`` or ``aux`` (operator-mutated)."""
        nodes = topo_sort(self._outputs)
        mutated = set()
        for n in nodes:
            if n.op is not None:
                for k in n.op.mutate_inputs(n.params):
                    if k < len(n.inputs):
                        mutated.add(id(n.inputs[k].node))
        return [n for n in nodes if n.is_variable and
                (kind == "all" or (id(n) in mutated) == (kind == "aux"))]

    def list_arguments(self) -> List[str]:
        """Names of the arguments (inputs that are not auxiliary states), in graph order."""
        return [n.name for n in self._variables("args")]

    def list_auxiliary_states(self) -> List[str]:
        """Names of the auxiliary states (inputs operators update, e.g. BatchNorm's moving_mean)."""
        return [n.name for n in self._variables("aux")]

    def list_inputs(self) -> List[str]:
        """Names of all variables: arguments and auxiliary states, in graph order."""
        return [n.name for n in self._variables("all")]

    def list_outputs(self) -> List[str]:
        """Output names: a variable's own name, else ``<node>_<output>`` (``fc1_output``)."""
        names = []
        for e in self._outputs:
            if e.node.is_variable:
                names.append(e.node.name)
            else:
                out = e.node.op.list_outputs(e.node.params)[e.index]
                names.append(f"{e.node.name}_{out}" if e.node.name else out)
        return names

    def get_internals(self) -> "Symbol":
        """Every visible output of every node, in topological order, as one grouped symbol."""
        entries = []
        for n in topo_sort(self._outputs):
            if n.is_variable:
                entries.append(NodeEntry(n, 0, json_format.variable_version(n)))
            else:
                entries.extend(NodeEntry(n, i, 0) for i in range(n.op.num_visible_outputs(n.params)))
        return Symbol(entries)

    def get_children(self) -> Optional["Symbol"]:
        """The inputs of this symbol's output nodes as one group, or ``None`` for a variable.

        Each node counts once: the outputs of ``SliceChannel(data, num_outputs=3)`` have one
        child, ``data`` (as nnvm's ``Symbol::GetChildren``)."""
        nodes = list({id(out.node): out.node for out in self._outputs}.values())
        entries = [e for node in nodes for e in node.inputs]
        return Symbol(entries) if entries else None

    def _gen_atomic_symbol(self) -> "Symbol":
        """The head operator alone (MXNet's atomic symbol): a new node of the same operator and
        attributes, its inputs fresh variables named after its arguments, its visible outputs."""
        head = self._outputs[0].node
        if head.is_variable:
            raise MXNetError(f"_gen_atomic_symbol: '{head.name}' is a variable, not an operator")
        node = Node(head.op, head.name, dict(head.attrs))
        node.inputs = [NodeEntry(Node(None, n), 0, 0) for n in head.op.list_inputs(node.params)]
        return Symbol([NodeEntry(node, i, 0) for i in range(head.op.num_visible_outputs(node.params))])

    # -- composition ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs) -> "Symbol":
        """A copy of this symbol with variables replaced by keyword: ``net(data=other)``."""
        s = self.__copy__()
        s._compose(*args, **kwargs)
        return s

    def _compose(self, *args, name: Optional[str] = None, **kwargs) -> None:
        """Replace variables of this graph, in place, by the symbols given by keyword."""
        if args and kwargs:
            raise TypeError("compose only accepts input Symbols either as positional or keyword "
                            "arguments, not both")
        if args:
            raise MXNetError("general composition only supports keyword arguments "
                             "(symbol(name_of_variable=other_symbol))")
        inputs = self.list_inputs()
        for key, value in kwargs.items():
            if not isinstance(value, Symbol) or len(value._outputs) != 1:
                raise TypeError(f"compose: '{key}' must be a single-output Symbol")
            if key not in inputs:
                raise MXNetError(f"compose: keyword argument '{key}' is not an input of this "
                                 f"symbol; its inputs are {inputs}")

        def replace(e: NodeEntry) -> NodeEntry:
            if e.node.is_variable and e.node.name in kwargs:
                return kwargs[e.node.name]._outputs[0]
            return e

        for node in topo_sort(self._outputs):
            node.inputs = [replace(e) for e in node.inputs]
        self._outputs = [replace(e) for e in self._outputs]
        if name and self.name is not None:
            self._outputs[0].node.name = name

    # -- inference -----------------------------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        """Shapes of arguments, outputs and auxiliary states from some known argument shapes.

        Returns ``(arg_shapes, out_shapes, aux_shapes)``, or ``(None, None, None)`` with a
        warning when the given shapes are not enough to decide every shape.
        """
        return self._infer("shape", False, args, kwargs)

    def infer_shape_partial(self, *args, **kwargs):
        """Like ``infer_shape`` but reports what it could not decide as ``()`` instead of failing."""
        return self._infer("shape", True, args, kwargs)

    def infer_type(self, *args, **kwargs):
        """Numpy types of arguments, outputs and auxiliary states (``(None, None, None)`` if unknown)."""
        return self._infer("dtype", False, args, kwargs)

    def infer_type_partial(self, *args, **kwargs):
        """Like ``infer_type`` but reports undecided types as ``None``."""
        return self._infer("dtype", True, args, kwargs)

    def _infer(self, kind: str, partial: bool, args, kwargs):
        """Run the ``infer_shape``/``infer_type`` pass and present its result as MXNet does."""
        what = "infer_shape" if kind == "shape" else "infer_type"
        np_shape = is_np_shape()
        arg_names, input_names = self.list_arguments(), self.list_inputs()
        if args and kwargs:
            raise ValueError(f"Can only specify known argument {kind}s either by positional or "
                             "kwargs way.")
        if len(args) > len(arg_names):
            raise MXNetError(f"{what}: {len(args)} positional values for {len(arg_names)} "
                             f"arguments {arg_names}")
        known = {}
        for key, value in [*zip(arg_names, args), *kwargs.items()]:
            if key not in input_names:
                raise MXNetError(f"{what}: keyword argument '{key}' is not an input; "
                                 f"candidates: {input_names}")
            if value is not None:
                if kind == "shape" and np_shape and isinstance(value, (tuple, list)):
                    value = _from_np_shape(key, value)
                known[key] = _user_value(kind, key, value)
        try:
            graph = apply_pass(Graph(self._outputs), what,
                               **{kind + "_inputs": {k: v for k, v in known.items() if v is not None}})
        except MXNetError as exc:
            given = "".join(f"\n  {k}: {v}" for k, v in known.items())
            raise MXNetError(f"{what} error. Arguments:{given}\n{exc}") from None
        idx, values = graph.indexed, graph.attrs[kind]
        arg_vals = [values[idx.entry_id(nid, 0)] for nid in idx.arg_nodes]
        out_vals = [values[idx.entry_id(e)] for e in self._outputs]
        aux_vals = [values[idx.entry_id(nid, 0)] for nid in idx.mutable_input_nodes]
        if kind == "shape":
            known_fn = lambda s: s is not None and 0 not in s  # noqa: E731
            # Legacy semantics: an unknown shape is (), an unknown dim 0; NumPy's: None and -1.
            show = _to_np_shape if np_shape else (lambda s: s or ())
        else:
            known_fn, show = (lambda t: t is not None), (lambda t: None if t is None else t.type)
        if not partial and not all(known_fn(v) for v in arg_vals + out_vals + aux_vals):
            missing = "".join(f"\n\t{n}: {show(v)}" for n, v in zip(arg_names, arg_vals) if not known_fn(v))
            extra = " (0s in shape means unknown dimensions)" if kind == "shape" else ""
            warnings.warn(f"Cannot decide {'shape' if kind == 'shape' else 'type'} for the following "
                          f"arguments{extra}. Consider providing them as input:{missing}", stacklevel=3)
            return None, None, None
        return ([show(v) for v in arg_vals], [show(v) for v in out_vals], [show(v) for v in aux_vals])

    # -- serialisation -------------------------------------------------------------------------
    def tojson(self, remove_amp_cast: bool = True) -> str:
        """The graph in MXNet's JSON format (loads in MXNet 1.9.1, and back with ``load_json``)."""
        return json_format.to_json(self._outputs)

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        """Write ``tojson()`` to ``fname`` (``mx.sym.load`` reads it back)."""
        if not isinstance(fname, str):
            raise TypeError("fname must be a string")
        with open(fname, "w") as f:
            f.write(self.tojson())

    def debug_str(self) -> str:
        """A readable listing of the graph, in nnvm's format."""
        lines = ["Symbol Outputs:"]
        lines += [f"\toutput[{i}]={e.node.name}({e.index})" for i, e in enumerate(self._outputs)]
        for n in topo_sort(self._outputs):
            if n.is_variable:
                lines.append(f"Variable:{n.name}")
                continue
            lines += ["--------------------", f"Op:{n.op.name}, Name={n.name}", "Inputs:"]
            lines += [f"\targ[{i}]={e.node.name}({e.index}) version={e.version}"
                      for i, e in enumerate(n.inputs)]
            if n.attrs:
                lines.append("Attrs:")
                lines += [f"\t{k}={v}" for k, v in n.attrs.items()]
            if n.control_deps:
                lines.append("Control deps:")
                lines += [f"\tcdep[{i}]={d.name}" for i, d in enumerate(n.control_deps)]
        return "\n".join(lines) + "\n"

    # -- execution (mxref.executor does the work) ----------------------------------------------
    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Bind arrays to the arguments and return an ``Executor`` (see ``mxref.executor.bind``)."""
        from .. import executor
        return executor.bind(self, ctx, args, args_grad=args_grad, grad_req=grad_req,
                             aux_states=aux_states, group2ctx=group2ctx, shared_exec=shared_exec)

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Allocate arrays from the given input shapes and bind (see ``mxref.executor.simple_bind``)."""
        from .. import executor
        return executor.simple_bind(self, ctx, grad_req=grad_req, type_dict=type_dict,
                                    stype_dict=stype_dict, group2ctx=group2ctx,
                                    shared_arg_names=shared_arg_names, shared_exec=shared_exec,
                                    shared_buffer=shared_buffer, **kwargs)

    def eval(self, ctx=None, **kwargs):
        """Bind ``kwargs`` (name -> NDArray), run forward once and return the outputs."""
        if ctx is None:
            from ..context import current_context
            ctx = current_context()
        return self.bind(ctx, kwargs).forward()


# -------------------------------------------------------------------------------------------------
# Creating symbols
# -------------------------------------------------------------------------------------------------

def _from_np_shape(key: str, value) -> Tuple[int, ...]:
    """A shape given under NumPy shape semantics: -1 (unknown) becomes mxref's 0."""
    if any(isinstance(d, (int, np.integer)) and d < -1 for d in value):
        raise MXNetError(f"infer_shape: the shape of '{key}' has a dimension below -1: {tuple(value)}")
    return tuple(0 if d == -1 else d for d in value)


def _to_np_shape(shape):
    """An inferred shape as NumPy shape semantics shows it: ``None`` unknown, -1 an unknown dim."""
    return None if shape is None else tuple(-1 if d == 0 else d for d in shape)


def _user_value(kind: str, key: str, value):
    """A shape (tuple of ints; ``()`` means unknown, as in MXNet 1.x) or a dtype given by the user."""
    if kind == "dtype":
        return normalize_dtype(value, f"dtype of '{key}'")
    if not isinstance(value, (tuple, list)) or not all(isinstance(d, (int, np.integer)) for d in value):
        raise MXNetError(f"infer_shape: the shape of '{key}' must be a tuple of ints, got {value!r}")
    return tuple(int(d) for d in value) or None


def Variable(name: str, attr: Dict[str, str] = None, shape: Tuple[int, ...] = None,
             lr_mult: float = None, wd_mult: float = None, dtype=None, init=None, stype: str = None,
             **kwargs) -> Symbol:
    """A symbolic variable (a graph input) named ``name``.

    ``shape``, ``lr_mult``, ``wd_mult``, ``dtype``, ``init`` and ``stype`` are stored as the
    attributes ``__shape__``, ``__lr_mult__``, ``__wd_mult__``, ``__dtype__`` (MXNet's type flag),
    ``__init__`` (an initializer's ``dumps()``) and ``__storage_type__``; extra keyword attributes
    must be spelt ``__like_this__``.
    """
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    attrs = dict(attribute.current().get(attr))
    if shape is not None:
        # MXNet takes a bare int as a 1-d shape: ``var('b', shape=(1))`` is ``shape=(1,)``.
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        attrs["__shape__"] = str(shape)
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_NP_TO_MX[normalize_dtype(dtype)])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else (
            init.dumps() if hasattr(init, "dumps") else str(init))
    if stype is not None:
        if stype not in _STORAGE_TYPES:
            raise MXNetError(f"Variable {name}: unknown stype {stype!r}; known: {list(_STORAGE_TYPES)}")
        attrs["__storage_type__"] = str(_STORAGE_TYPES[stype])
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise ValueError(f"Attribute name={key} is not supported. Additional attributes must "
                             "start and end with double underscores, e.g, __yourattr__")
        attrs[key] = str(value)
    for key, value in attrs.items():
        if not isinstance(value, str):
            raise ValueError(f"Variable {name}: attribute {key!r} must be a string, got {value!r}")
    return Symbol([NodeEntry(Node(None, name, {attribute.hide_key(k): v for k, v in attrs.items()}))])


var = Variable


def Group(symbols: Sequence[Symbol]) -> Symbol:
    """One symbol whose outputs are the outputs of ``symbols``, in order."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return Symbol([e for s in symbols for e in s._outputs])


def load_json(json_str: str) -> Symbol:
    """A symbol from MXNet JSON text (any MXNet 1.x version)."""
    if not isinstance(json_str, str):
        raise TypeError("json_str must be a string")
    return Symbol(json_format.from_json(json_str))


def load(fname: str) -> Symbol:
    """A symbol from a JSON file written by ``Symbol.save`` or by MXNet."""
    if not isinstance(fname, str):
        raise TypeError("fname must be a string")
    try:
        with open(fname, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise MXNetError(f"load: cannot read {fname}: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MXNetError(f"load: {fname} is not UTF-8 text ({exc})") from None
    return Symbol(json_format.from_json(text, source=fname))
