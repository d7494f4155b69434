"""MXNet's JSON graph format: write it byte for byte as MXNet 1.9.1 does, read it back from any 1.x.

A graph file is an object with

* ``nodes``        — topologically ordered; each has ``op`` (``"null"`` for a variable), ``name``,
                     ``attrs`` (all strings; omitted when empty) and ``inputs`` ``[[nid, index, version]]``
* ``arg_nodes``    — ids of every variable node (auxiliary states included)
* ``node_row_ptr`` — prefix sums of the nodes' output counts (entry ids)
* ``heads``        — the graph outputs as ``[nid, index, version]``
* ``subgraphs``    — (on a control-flow node) its body graphs, each a document like this one
                     without ``attrs`` (``docs/architecture/control-flow.md``)
* ``attrs``        — ``{"mxnet_version": ["int", 10901]}``

Files written before MXNet 1.0 use ``param``/``attr`` instead of ``attrs``, store hidden keys
without underscores (``ctx_group``, ``weight_lr_mult``) and, before 0.9, omit auxiliary inputs;
``load_json`` upgrades them as MXNet's ``LoadLegacyJSON`` pass does.
"""
from __future__ import annotations

import json
import warnings
from typing import Dict, List, Sequence

from ..attribute import HIDDEN_KEYS
from ..base import MXNetError
from ..graph import Graph, Node, NodeEntry, topo_sort
from ..ops import registry
from ..util import is_np_shape

__all__ = ["MXNET_VERSION", "to_json", "from_json", "variable_version", "apply_input_var_attrs"]

MXNET_VERSION = 10901  # the version we write, and the format we read natively


def variable_version(node: Node) -> int:
    """How many times operators have mutated this variable (nnvm's ``VariableParam.version``)."""
    return node.extra.get("version", 0)


def apply_input_var_attrs(node: Node) -> None:
    """Give variable inputs the attributes their operator asks for (BatchNorm's ``__init__``).

    ``OpDef.input_var_attrs`` maps an input name to attributes; MXNet calls this hook
    ``FSetInputVarAttrOnCompose``. It is how ``moving_var`` comes to be initialised to one.
    """
    wanted = getattr(node.op, "input_var_attrs", None)
    if not wanted:
        return
    for arg_name, entry in zip(node.op.list_inputs(node.params), node.inputs):
        if entry.node.is_variable and arg_name in wanted:
            # NOTE: a variable that already has an initializer (``var('g', init=...)``) keeps it.
            for key, value in wanted[arg_name].items():
                entry.node.attrs.setdefault(key, value)


# ---------------------------------------------------------------------------------------------
# Writing. dmlc's JSON writer puts an array on several lines when it has more than 10 elements or
# holds objects, a string map when it has more than one key, and always does so for objects.
# ---------------------------------------------------------------------------------------------

class _Object(list):
    """Key/value pairs of a JSON object that is always written over several lines."""


def _join(parts: List[str], opener: str, closer: str, multi_line: bool, depth: int) -> str:
    if not parts:
        return opener + closer
    if not multi_line:
        return opener + ", ".join(parts) + closer
    pad = "\n" + "  " * (depth + 1)
    return opener + pad + (", " + pad).join(parts) + "\n" + "  " * depth + closer


def _write(value, depth: int) -> str:
    if isinstance(value, _Object):
        parts = [f"{json.dumps(k)}: {_write(v, depth + 1)}" for k, v in value]
        return _join(parts, "{", "}", True, depth)
    if isinstance(value, dict):
        parts = [f"{json.dumps(k, ensure_ascii=False)}: {_write(value[k], depth + 1)}"
                 for k in sorted(value)]
        return _join(parts, "{", "}", len(value) > 1, depth)
    if isinstance(value, list):
        multi_line = len(value) > 10 or any(isinstance(v, _Object) for v in value)
        return _join([_write(v, depth + 1) for v in value], "[", "]", multi_line, depth)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(int(value))


def to_json(outputs: Sequence[NodeEntry]) -> str:
    """The graph reachable from ``outputs`` as MXNet 1.9.1 writes it (``Symbol.tojson``)."""
    doc = _graph_doc(outputs)
    attrs = {"mxnet_version": ["int", MXNET_VERSION]}
    if is_np_shape():       # as MXNet: the graph says its 0 dims are real (NumPy shape semantics)
        attrs = {"is_np_shape": ["int", 1], **attrs}
    doc.append(("attrs", attrs))
    return _write(doc, 0)


def _graph_doc(outputs: Sequence[NodeEntry]) -> "_Object":
    """One graph's ``nodes``, ``arg_nodes``, ``node_row_ptr`` and ``heads``; a control-flow node's
    subgraphs are written the same way under its ``subgraphs`` key (without ``attrs``, as MXNet)."""
    nodes = topo_sort(outputs)
    nid = {id(n): i for i, n in enumerate(nodes)}
    row_ptr = [0]
    json_nodes = []
    for node in nodes:
        row_ptr.append(row_ptr[-1] + node.num_outputs())
        fields = _Object([("op", "null" if node.is_variable else node.op.name), ("name", node.name)])
        if node.attrs:
            fields.append(("attrs", {k: str(v) for k, v in node.attrs.items()}))
        fields.append(("inputs", [[nid[id(e.node)], e.index, e.version] for e in node.inputs]))
        if node.control_deps:
            fields.append(("control_deps", [nid[id(d)] for d in node.control_deps]))
        if node.subgraphs:
            fields.append(("subgraphs", [_graph_doc(g.outputs) for g in node.subgraphs]))
        json_nodes.append(fields)
    return _Object([
        ("nodes", json_nodes),
        ("arg_nodes", [i for i, n in enumerate(nodes) if n.is_variable]),
        ("node_row_ptr", row_ptr),
        ("heads", [[nid[id(e.node)], e.index, e.version] for e in outputs]),
    ])


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

MAX_SUBGRAPH_DEPTH = 32   # loops nested in loops; deeper documents are refused, not recursed into
MAX_ATTR_CHARS = 1 << 20   # one attribute key or value; MXNet's are short strings
# What a malformed operator attribute can raise on its way through an op's parser (numbers that
# overflow, literals nested past the parser's depth); each is reported as an MXNetError.
_PARSE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError, SyntaxError, KeyError,
                 IndexError, AttributeError)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entry(nodes: List[Node], raw, where: str) -> NodeEntry:
    if not isinstance(raw, list) or not 2 <= len(raw) <= 3 or not all(_is_int(v) for v in raw):
        raise MXNetError(f"load_json: {where}: bad entry {raw!r:.200}, expected [node_id, index, version] "
                         "of integers")
    node_id, index = raw[0], raw[1]
    if not 0 <= node_id < len(nodes):
        raise MXNetError(f"load_json: {where}: entry {raw!r} refers to node {node_id}, but only "
                         f"{len(nodes)} nodes precede it")
    version = raw[2] if len(raw) == 3 else 0
    if version < 0:
        raise MXNetError(f"load_json: {where}: entry {raw!r} has a negative version")
    if not 0 <= index < nodes[node_id].num_outputs():
        raise MXNetError(f"load_json: {where}: entry {raw!r}: output index {index} is out of range "
                         f"(node '{nodes[node_id].name}' has {nodes[node_id].num_outputs()} outputs)")
    return NodeEntry(nodes[node_id], index, version)


def _check_str(value, what: str, where: str) -> str:
    if not isinstance(value, str):
        raise MXNetError(f"load_json: {where}: {what} must be a string, got {type(value).__name__}")
    if len(value) > MAX_ATTR_CHARS:
        raise MXNetError(f"load_json: {where}: {what} is {len(value)} characters long "
                         f"(at most {MAX_ATTR_CHARS})")
    return value


def _node_attrs(raw: dict, where: str) -> Dict[str, str]:
    attrs: Dict[str, str] = {}
    for key in ("param", "attr", "attrs"):  # the first two are pre-1.0 spellings
        table = raw.get(key)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise MXNetError(f"load_json: {where}: '{key}' must be an object, got {type(table).__name__}")
        for k, v in table.items():
            if isinstance(v, (bool, int, float)):   # legacy writers stored some numbers bare
                v = str(v)
            attrs[k] = _check_str(v, f"attribute {k[:80]!r}", where)
            _check_str(k, "an attribute name", where)
    return attrs


def _int_list(raw: dict, key: str, where: str) -> list:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise MXNetError(f"load_json: {where}: '{key}' must be a list, got {type(value).__name__}")
    return value


def _read_version(doc: dict) -> int:
    attrs = doc.get("attrs") or {}
    if not isinstance(attrs, dict):
        raise MXNetError(f"load_json: the graph's 'attrs' must be an object, got {type(attrs).__name__}")
    version_attr = attrs.get("mxnet_version")
    if version_attr is None:
        return 800
    if (not isinstance(version_attr, list) or len(version_attr) != 2
            or not isinstance(version_attr[1], (int, str)) or isinstance(version_attr[1], bool)):
        raise MXNetError(f"load_json: bad mxnet_version {version_attr!r:.200}, expected [\"int\", 10901]")
    try:
        version = int(version_attr[1])
    except ValueError:
        raise MXNetError(f"load_json: bad mxnet_version {version_attr!r:.200}, "
                         "expected [\"int\", 10901]") from None
    if not 0 <= version < 10 ** 8:
        raise MXNetError(f"load_json: mxnet_version {version} is out of range")
    return version


def _parse_op_attrs(node: Node) -> None:
    """Parse the op parameters, tolerating (with a warning) parameters mxref does not know."""
    op_attrs = {k: v for k, v in node.attrs.items() if not (k.startswith("__") and k.endswith("__"))}
    unknown = sorted(k for k in op_attrs if k not in node.op.params)
    if unknown and not node.op.extra_params:   # Custom passes unknown keys on to its prop
        warnings.warn(f"load_json: operator {node.op.name} (node '{node.name}') ignores "
                      f"attributes it does not know: {unknown}", stacklevel=3)
    try:
        node._params = node.op.parse_params(op_attrs, allow_extra=True)
    except MXNetError as exc:
        raise MXNetError(f"load_json: node '{node.name[:200]}': {str(exc)[:500]}") from None


def _pop_legacy_hidden(attrs: Dict[str, str]) -> Dict[str, str]:
    """Before 1.0, hidden keys were written plainly: ``ctx_group``, or ``weight_lr_mult`` for an input."""
    legacy = {}
    for key in list(attrs):
        if any(key == h or key.endswith("_" + h) for h in HIDDEN_KEYS):
            legacy[key] = attrs.pop(key)
    return legacy


def _restore_legacy_hidden(node: Node, legacy: Dict[str, str]) -> None:
    """``ctx_group`` -> ``__ctx_group__``; ``weight_lr_mult`` -> ``__lr_mult__`` on the weight variable."""
    names = [] if node.is_variable else node.op.list_inputs(node.params)
    for key, value in legacy.items():
        hidden = next(h for h in HIDDEN_KEYS if key == h or key.endswith("_" + h))
        if key == hidden:
            node.attrs[f"__{hidden}__"] = value
            continue
        arg = key[: -len(hidden) - 1]
        if arg in names and names.index(arg) < len(node.inputs):
            target = node.inputs[names.index(arg)].node
            if target.is_variable:
                target.attrs[f"__{hidden}__"] = value
                continue
        node.attrs[key] = value


def _upgrade(node: Node, version: int) -> None:
    """The per-node upgrades of MXNet's ``LoadLegacyJSON``, for files older than 0.9.5."""
    if node.is_variable:
        return
    if version < 905 and node.op.name in ("argmax", "argmin") and node.attrs.get("axis") == "-1":
        del node.attrs["axis"]  # 0.9.5 turned axis=-1 ("all") into an absent axis
        _parse_op_attrs(node)
    if version < 900:
        # auxiliary states were not saved before 0.9: recreate them as MXNet does
        for arg in node.op.list_inputs(node.params)[len(node.inputs):]:
            node.inputs.append(NodeEntry(Node(None, f"{node.name}_{arg}", dict(node.attrs)), 0, 0))
    if version < 904:
        apply_input_var_attrs(node)


def from_json(text: str, source: str = "") -> List[NodeEntry]:
    """The output entries of a graph saved as MXNet JSON (any 1.x version, see module docstring).

    Every malformed structure is an ``MXNetError`` naming the node (and ``source``, a file name,
    when given).
    """
    try:
        return _from_json(text)
    except MXNetError as exc:
        if source:
            raise MXNetError(f"{exc} (in {source})") from None
        raise


def _from_json(text: str) -> List[NodeEntry]:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:   # RecursionError: nesting deeper than the decoder's stack
        raise MXNetError(f"load_json: not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or "nodes" not in doc or "heads" not in doc:
        raise MXNetError("load_json: a graph needs 'nodes' and 'heads'")
    if not isinstance(doc["nodes"], list) or not isinstance(doc["heads"], list):
        raise MXNetError("load_json: 'nodes' and 'heads' must be lists")
    return _read_graph(doc, _read_version(doc))


def _read_graph(doc: dict, version: int, depth: int = 0) -> List[NodeEntry]:
    if depth > MAX_SUBGRAPH_DEPTH:
        raise MXNetError(f"load_json: subgraphs nested deeper than {MAX_SUBGRAPH_DEPTH} levels")
    nodes: List[Node] = []
    for i, raw in enumerate(doc["nodes"]):
        if not isinstance(raw, dict):
            raise MXNetError(f"load_json: node {i} must be an object, got {type(raw).__name__}")
        if "name" not in raw:
            raise MXNetError(f"load_json: node {i} has no 'name'")
        name = _check_str(raw["name"], "'name'", f"node {i}")
        where = f"node {i} ({name[:200]!r})"
        try:
            nodes.append(_read_node(raw, nodes, version, where, depth))
        except _PARSE_ERRORS as exc:
            raise MXNetError(f"load_json: {where}: {type(exc).__name__}: {str(exc)[:200]}") from None
    return [_entry(nodes, h, f"head {k}") for k, h in enumerate(doc["heads"])]


def _read_subgraphs(raw: dict, version: int, where: str, depth: int) -> List[Graph]:
    """A control-flow node's ``subgraphs``: each a graph document like the top one."""
    graphs = []
    for k, sub in enumerate(_int_list(raw, "subgraphs", where)):
        if not isinstance(sub, dict) or not isinstance(sub.get("nodes"), list) \
                or not isinstance(sub.get("heads"), list):
            raise MXNetError(f"load_json: {where}: subgraph {k} needs 'nodes' and 'heads' lists")
        try:
            graphs.append(Graph(_read_graph(sub, version, depth + 1)))
        except MXNetError as exc:
            raise MXNetError(f"{exc} (in subgraph {k} of {where})") from None
    return graphs


def _read_node(raw: dict, nodes: List[Node], version: int, where: str, depth: int = 0) -> Node:
    attrs = _node_attrs(raw, where)
    legacy = _pop_legacy_hidden(attrs) if version < MXNET_VERSION else {}
    op_name = _check_str(raw.get("op", "null"), "'op'", where)
    if op_name == "null":
        node = Node(None, raw["name"], attrs)
    else:
        if not registry.exists(op_name):
            raise MXNetError(f"load_json: {where} uses operator '{op_name[:200]}', which is not registered")
        node = Node(registry.get(op_name), raw["name"], attrs)
        node.subgraphs = _read_subgraphs(raw, version, where, depth)
        _parse_op_attrs(node)
    node.inputs = [_entry(nodes, e, where) for e in _int_list(raw, "inputs", where)]
    deps = _int_list(raw, "control_deps", where)
    for j in deps:
        if not _is_int(j) or not 0 <= j < len(nodes):
            raise MXNetError(f"load_json: {where}: control dependency {j!r:.50} is not the id of an "
                             f"earlier node (0..{len(nodes) - 1})")
    node.control_deps = [nodes[j] for j in deps]
    for e in node.inputs:
        if e.node.is_variable and e.version > variable_version(e.node):
            e.node.extra["version"] = e.version
    _restore_legacy_hidden(node, legacy)
    _upgrade(node, version)
    return node
