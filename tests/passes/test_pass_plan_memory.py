"""plan_memory: nnvm's in-place / reuse / release rules, colouring, and plan invariants on random graphs."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_helpers import annotate, op, var

from mxref.base import MXNetError
from mxref.graph import apply_pass
from mxref.passes.memory_report import Span, block_lower_bound
from mxref.passes.plan_memory import (
    EXTERNAL_STORAGE_ID,
    color_node_group,
    debug_str_footer,
    memory_report,
    plan_memory,
    total_mb_allocated,
)


def _plan(outputs, var_shapes, **kw):
    return apply_pass(annotate(outputs, var_shapes), "plan_memory", **kw)


def _sid(g, entry):
    return g.attrs["storage_id"][g.indexed.entry_id(entry)]


def test_inplace_chain_shares_one_block():
    """Ops that allow in-place reuse their input's block when they are its only reader."""
    x = var("x")
    a = op("_tp_plain", x)
    b = op("_tp_inplace", a)
    c = op("_tp_inplace", b)
    g = _plan([c], {"x": (10, 10)})
    assert _sid(g, a) == _sid(g, b) == _sid(g, c) == 0
    idx = g.indexed
    assert g.attrs["storage_inplace_index"][idx.entry_id(b)] == 0
    assert g.attrs["storage_allocated_bytes"] == 400


def test_no_inplace_from_graph_input_or_when_input_read_later():
    """A variable has no planned storage to take; an input still read by another node is kept."""
    x = var("x")
    a = op("_tp_inplace", x)
    b = op("_tp_inplace", a)
    c = op("_tp_add", b, a)     # a is still needed here, so b cannot overwrite it
    g = _plan([c], {"x": (4,)})
    assert _sid(g, a) >= 0 and _sid(g, a) != _sid(g, b)
    # c may take b's block (its reader count drops to 1 at c) and not a's
    assert _sid(g, c) == _sid(g, b)


def test_reuse_after_release_alternates_two_blocks():
    """Without in-place, a chain needs two blocks: each output is requested before its input frees."""
    h = var("x")
    outs = []
    for _ in range(5):
        h = op("_tp_plain", h)
        outs.append(h)
    g = _plan([h], {"x": (8,)})
    assert [_sid(g, e) for e in outs] == [0, 1, 0, 1, 0]
    assert g.attrs["storage_allocated_bytes"] == 2 * 32


def test_match_range_limits_reuse_and_blocks_grow():
    """A freed block is reused only within the match range; a reused block grows to the request."""
    x = var("x")
    small = op("_tp_resize", x, n=100)
    big = op("_tp_resize", small, n=1000)       # small is still alive while big is requested
    bigger = op("_tp_resize", big, n=1500)      # reuses small's block (ratio 15 < 16) and grows it
    g = _plan([bigger], {"x": (1,)})
    assert _sid(g, bigger) == _sid(g, small)
    assert g.attrs["storage_allocated_bytes"] == (1500 + 1000) * 4
    g8 = _plan([bigger], {"x": (1,)}, match_range=8)
    assert _sid(g8, bigger) not in (_sid(g8, small), _sid(g8, big))
    g0 = _plan([bigger], {"x": (1,)}, match_range=0)
    assert len({_sid(g0, e) for e in (small, big, bigger)}) == 3


def test_larger_free_block_first_then_smaller_one_grows():
    """A request takes a free block at least as large if there is one, else a smaller one, grown."""
    x = var("x")
    a = op("_tp_resize", x, n=50)
    b = op("_tp_resize", a, n=60)          # frees a's 50-element block
    c = op("_tp_resize", b, n=70)          # no free block >= 70: takes a's and grows it to 70
    r1 = op("_tp_resize", c, n=64)         # nothing free (b is still read by r2)
    r2 = op("_tp_resize", b, n=64)         # c's 70-element block is free and large enough
    d = op("_tp_add", r1, r2)              # in place on r1
    g = _plan([d], {"x": (1,)})
    assert _sid(g, c) == _sid(g, a) and _sid(g, r2) == _sid(g, c) and _sid(g, d) == _sid(g, r1)
    assert g.attrs["storage_allocated_bytes"] == (70 + 60 + 64) * 4
    report = memory_report(g)
    assert report["no_sharing"] == (50 + 60 + 70 + 64 + 64 + 64) * 4
    assert report["lower_bound"] <= report["planned"]


def test_external_storage_is_never_planned():
    """Entries pre-set to kExternalStorageID keep it and their readers do not release it."""
    x = var("x")
    a = op("_tp_plain", x)
    b = op("_tp_inplace", a)
    g = annotate([b], {"x": (4,)})
    storage = [-1] * g.indexed.num_node_entries
    storage[g.indexed.entry_id(a)] = EXTERNAL_STORAGE_ID
    g.attrs["storage"] = storage
    g = plan_memory(g)
    assert _sid(g, a) == EXTERNAL_STORAGE_ID
    assert _sid(g, b) == 0      # external memory is never taken in place
    assert g.attrs["storage_allocated_bytes"] == 16


def test_ignored_input_does_not_keep_memory_alive():
    """An input listed in ``ignore_inputs`` is not counted as a reader."""
    x = var("x")
    a = op("_tp_plain", x)
    z = op("_tp_zeros_like", a)       # ignores a: a dies here even though z is computed later
    b = op("_tp_plain", op("_tp_plain", z))
    g = _plan([b, a], {"x": (4,)})
    assert _sid(g, a) != _sid(g, z)   # a is an output: never released
    g2 = _plan([b], {"x": (4,)})
    idx = g2.indexed
    assert g2.attrs["storage_inplace_index"][idx.entry_id(a)] == -2   # written, never read


def test_identity_inplace_even_with_other_readers():
    """An identity pair shares memory although its input is read again later."""
    x = var("x")
    a = op("_tp_plain", x)
    i = op("_tp_ident", a)
    c = op("_tp_add", i, a)
    g = _plan([c], {"x": (4,)})
    assert _sid(g, i) == _sid(g, a)


def test_unknown_shape_is_not_allocated():
    """An entry with an unknown shape keeps the bad storage id and is counted."""
    x = var("x")
    a = op("_tp_plain", x)
    g = annotate([a], {"x": (4,)})
    g.attrs["shape"][g.indexed.entry_id(a)] = None
    g = plan_memory(g)
    assert _sid(g, a) == -1 and g.attrs["storage_num_not_allocated"] == 1


def test_size_first_packs_values_offline_and_auto_keeps_the_smaller_plan():
    """size_first puts the largest values first and fills gaps; auto is never worse than nnvm."""
    x = var("x")
    a = op("_tp_resize", x, n=10)
    b = op("_tp_resize", a, n=100)      # a is free after this node
    c = op("_tp_resize", b, n=1000)     # a's block is out of nnvm's match range: a new block
    d = op("_tp_resize", c, n=100)      # reuses b's block
    nnvm = _plan([d], {"x": (1,)}, strategy="nnvm")
    packed = _plan([d], {"x": (1,)}, strategy="size_first")
    best = _plan([d], {"x": (1,)}, strategy="auto")
    assert nnvm.attrs["storage_allocated_bytes"] == (10 + 100 + 1000) * 4
    # offline: c's block is free before c is produced, so a lives there first
    assert packed.attrs["storage_allocated_bytes"] == (1000 + 100) * 4
    assert _sid(packed, a) == _sid(packed, c) and _sid(packed, d) == _sid(packed, b)
    assert best.attrs["storage_allocated_bytes"] == packed.attrs["storage_allocated_bytes"]
    with pytest.raises(MXNetError, match="unknown strategy 'best'"):
        _plan([d], {"x": (1,)}, strategy="best")


def test_block_lower_bound_counts_blocks_a_small_long_value_pins():
    """A 10-byte value alive throughout, a 100-byte one, then two 60-byte ones at once: 130 bytes
    are ever alive together, but one-block-per-value plans need a 100 block, a second block of at
    least 60 and a third of at least 10 (40 + 2*50 + 3*10 = 170)."""
    spans = [Span(0, 5, 10, [0]), Span(1, 1, 100, [1]), Span(2, 2, 60, [2]), Span(2, 2, 60, [3])]
    assert block_lower_bound(spans, 6) == 100 + 60 + 10
    assert block_lower_bound(spans[:2], 6) == 110 and block_lower_bound([], 6) == 0


def test_shape_attribute_length_checked():
    x = var("x")
    g = annotate([op("_tp_plain", x)], {"x": (4,)})
    g.attrs["shape"] = g.attrs["shape"][:1]
    with pytest.raises(MXNetError, match="plan_memory: graph attribute 'shape'"):
        plan_memory(g)


def test_total_mb_and_footer_count_like_mxnet():
    """``Total N MB allocated`` is planned bytes >> 20 with 4 bytes per element for every dtype."""
    x = var("x")
    a = op("_tp_plain", x)
    b = op("_tp_plain", a)
    g = apply_pass(annotate([b], {"x": (1024, 1024)}, dtype=np.float64), "plan_memory")
    assert g.attrs["storage_allocated_bytes"] == 2 * 4 * 1024 * 1024
    assert g.attrs["storage_bytes"] == [8 * 1024 * 1024] * 2
    assert total_mb_allocated(g) == 8
    assert debug_str_footer(g).splitlines() == ["Total 8 MB allocated",
                                                "Total 11 TempSpace resource requested"]


def test_auto_search_keeps_the_smallest_plan():
    """With auto search the pass tries match ranges 1..16 and never does worse than 16 alone."""
    x = var("x")
    h = x
    for n in (300, 20, 310, 19, 600, 21, 40):
        h = op("_tp_resize", h, n=n)
    fixed = _plan([h], {"x": (1,)}, match_range=16)
    searched = _plan([h], {"x": (1,)}, match_range=16, auto_search=True)
    assert searched.attrs["storage_allocated_bytes"] <= fixed.attrs["storage_allocated_bytes"]
    assert searched.attrs["storage_allocated_bytes"] == min(
        _plan([h], {"x": (1,)}, match_range=m).attrs["storage_allocated_bytes"] for m in (1, 2, 4, 8, 16))


def test_colouring_puts_the_longest_path_first_and_limits_sharing():
    """The heaviest path gets colour 0; with 2 colours blocks are reused only within a colour."""
    x = var("x")
    left = x
    for _ in range(4):
        left = op("_tp_plain", left)
    right = op("_tp_plain", x)
    out = op("_tp_add", left, right)
    g = annotate([out], {"x": (4,)})
    idx = g.indexed
    ncolor, color = color_node_group(idx, [0 if n.is_variable else 1 for n in idx.nodes], 2)
    assert ncolor == 2
    assert color[idx.node_id[id(left.node)]] == 0 and color[idx.node_id[id(out.node)]] == 0
    assert color[idx.node_id[id(right.node)]] == 1
    g2 = plan_memory(g, num_colors=2)
    g1 = plan_memory(g, num_colors=1)
    assert g2.attrs["storage_allocated_bytes"] >= g1.attrs["storage_allocated_bytes"]


# ---------------------------------------------------------------------------------------------
# Invariants on random graphs
# ---------------------------------------------------------------------------------------------

def _check_invariants(g):
    idx = g.indexed
    sid, inplace = g.attrs["storage_id"], g.attrs["storage_inplace_index"]
    producer, last = {}, {}
    for nid, n in enumerate(idx.nodes):
        for eid in range(idx.entry_id(nid, 0), idx.entry_id(nid + 1, 0)):
            producer[eid] = last[eid] = nid
            if n.is_variable:
                assert sid[eid] == -1, "graph inputs get no planned storage"
    group = list(range(idx.num_node_entries))
    for nid, n in enumerate(idx.nodes):
        if n.is_variable:
            continue
        for i, e in enumerate(n.inputs):
            if i not in n.op.ignore_inputs:
                last[idx.entry_id(e)] = max(last[idx.entry_id(e)], nid)
        for k in range(n.num_outputs()):
            eid = idx.entry_id(nid, k)
            if inplace[eid] >= 0:
                assert (inplace[eid], k) in n.op.inplace, "in-place only where the op allows it"
                src = idx.entry_id(n.inputs[inplace[eid]])
                assert sid[src] == sid[eid]
                group[eid] = group[src]
    for e in idx.outputs:
        last[idx.entry_id(e)] = idx.num_nodes
    spans = {}
    for eid, s in enumerate(sid):
        if s < 0:
            continue
        lo, hi = spans.get((s, group[eid]), (producer[eid], last[eid]))
        spans[(s, group[eid])] = (min(lo, producer[eid]), max(hi, last[eid]))
    by_sid = {}
    for (s, _), span in spans.items():
        by_sid.setdefault(s, []).append(span)
    for s, lst in by_sid.items():
        lst.sort()
        for (a0, a1), (b0, b1) in zip(lst, lst[1:]):
            assert a1 < b0, f"storage {s}: live ranges {(a0, a1)} and {(b0, b1)} overlap"
    report = memory_report(g)
    assert report["lower_bound"] <= report["block_lower_bound"] <= report["planned"] <= report["no_sharing"]


@st.composite
def random_graphs(draw):
    """A recipe: variables, then ops whose inputs are earlier items (by index)."""
    n_vars = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 40)) for _ in range(n_vars)]
    recipe = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["_tp_inplace", "_tp_plain", "_tp_add", "_tp_ident",
                                     "_tp_zeros_like", "_tp_resize", "_tp_split"]))
        n_items = n_vars + len(recipe)
        recipe.append((kind, draw(st.integers(0, n_items - 1)), draw(st.integers(0, n_items - 1)),
                       draw(st.integers(1, 60))))
    return sizes, recipe, draw(st.integers(1, 3)), draw(st.sampled_from([0, 1, 4, 16])), \
        draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from(["nnvm", "size_first", "auto"]))


def _build(sizes, recipe):
    """Nodes for a recipe; the second operand of an add is resized to match the first."""
    built = [var(f"v{i}") for i in range(len(sizes))]
    size = list(sizes)
    for kind, ia, ib, n in recipe:
        a, s = built[ia], size[ia]
        if kind == "_tp_add":
            b = built[ib] if size[ib] == s else op("_tp_resize", built[ib], n=s)
            e = op("_tp_add", a, b)
        elif kind == "_tp_resize":
            e, s = op("_tp_resize", a, n=n), n
        elif kind == "_tp_split":
            e = op("_tp_split", a)._replace(index=n % 2)
        else:
            e = op(kind, a)
        built.append(e)
        size.append(s)
    return built


@settings(max_examples=120, deadline=None, derandomize=True)
@given(random_graphs())
def test_random_graph_plans_keep_live_entries_apart(case):
    """No two simultaneously live entries share storage unless joined in place by an op allowing it."""
    sizes, recipe, n_out, match_range, colors, strategy = case
    built = _build(sizes, recipe)
    outputs = built[-n_out:]
    shapes = {f"v{i}": (s,) for i, s in enumerate(sizes)}
    kw = dict(match_range=match_range, num_colors=colors, strategy=strategy)
    g = _plan(outputs, shapes, **kw)
    _check_invariants(g)
    again = _plan(outputs, shapes, **kw)
    assert again.attrs["storage_id"] == g.attrs["storage_id"], "planning is deterministic"
    if strategy == "auto":
        for other in ("nnvm", "size_first"):
            plain = _plan(outputs, shapes, **dict(kw, strategy=other))
            assert g.attrs["storage_allocated_bytes"] <= plain.attrs["storage_allocated_bytes"]
