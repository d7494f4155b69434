"""Concat / stack / SliceChannel: shapes, defaults, partial inference, errors and gradients."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

from mxref.base import MXNetError
from mxref.ops import registry

A = np.arange(12.0).reshape(3, 4)
B = np.arange(6.0).reshape(3, 2)


def test_concat_defaults_to_dim_1(fdtype):
    """concat joins along dim=1 by default (MXNet semantics item 12), negative dims count back."""
    (y,) = run_op("concat", A.astype(fdtype), B.astype(fdtype), num_args=2)
    np.testing.assert_array_equal(y, np.concatenate([A, B], axis=1))
    assert y.dtype == fdtype
    assert run_op("Concat", A, A, num_args=2, dim=-2)[0].shape == (6, 4)
    assert registry.get("Concat").list_arguments({"num_args": 3}) == ["arg0", "arg1", "arg2"]


def test_concat_partial_shapes_and_errors():
    """An unknown size on the concat axis leaves the output's unknown; other dims must agree."""
    infer = registry.get("Concat").infer_shape
    assert infer({"num_args": 2, "dim": 1}, [(3, 0), (3, 2)])[1] == [(3, 0)]
    with pytest.raises(MXNetError, match="Concat"):
        infer({"num_args": 2, "dim": 1}, [(3, 4), (2, 2)])
    with pytest.raises(MXNetError, match="num_args"):
        infer({"num_args": 3, "dim": 1}, [(3, 4), (3, 2)])


def test_stack_and_split_shapes():
    """stack adds an axis; split cuts equal parts, squeeze_axis drops size-1 axes."""
    assert run_op("stack", A, A, num_args=2, axis=-1)[0].shape == (3, 4, 2)
    parts = run_op("split", A, num_outputs=2)
    np.testing.assert_array_equal(parts[1], A[:, 2:])
    parts = run_op("SliceChannel", A, num_outputs=3, axis=0, squeeze_axis=True)
    assert [p.shape for p in parts] == [(4,)] * 3
    with pytest.raises(MXNetError, match="SliceChannel.*num_outputs=3"):
        run_op("SliceChannel", A, num_outputs=3)
    with pytest.raises(MXNetError, match="stack"):
        run_op("stack", A, B, num_args=2)


@pytest.mark.parametrize("name,args,params", [
    ("Concat", (A, B), dict(num_args=2)), ("Concat", (A, A), dict(num_args=2, dim=0)),
    ("stack", (A, A + 1), dict(num_args=2, axis=1)), ("SliceChannel", (A,), dict(num_outputs=2)),
    ("SliceChannel", (A,), dict(num_outputs=3, axis=0, squeeze_axis=True))], ids=str)
def test_join_gradients(name, args, params):
    """Concat splits its head gradient; stack and SliceChannel undo each other."""
    check_numeric_grad(name, *args, **params)


def test_split_gradient_with_unused_output():
    """An output without a head gradient contributes zeros."""
    from mxref.graph import Node, NodeEntry, make_node
    from mxref.symbol.eval_numpy import evaluate
    x = Node(None, "x")
    params = registry.get("SliceChannel").parse_params({"num_outputs": 2})
    node = make_node("SliceChannel", [NodeEntry(x, 0, 0)], "s", params=params)
    head = Node(None, "h")
    (g,) = node.op.gradient(node, [NodeEntry(head, 0, 0), None])
    (val,) = evaluate([g], {x: A, head: np.ones((3, 2))})
    np.testing.assert_array_equal(val, np.concatenate([np.ones((3, 2)), np.zeros((3, 2))], axis=1))
    assert grad_op("Concat", A, B, num_args=2)[1].shape == B.shape
