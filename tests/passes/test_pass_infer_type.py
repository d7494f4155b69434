"""Graph pass infer_type: dtypes flow through op rules both ways, __dtype__ hints, conflicts
name the operator, and Symbol.infer_type answers with numpy types as MXNet 1.9.1 does."""
import warnings

import numpy as np
import pytest

import mxref.name
import mxref.passes.infer_type  # noqa: F401 - registers the pass
import mxref.symbol as sym
from mxref.base import MXNetError
from mxref.graph import Graph, apply_pass, list_passes
from mxref.ops.registry import OpDef, exists, register

if not exists("TTypeAdd"):
    register(OpDef("TTypeAdd", arguments=("lhs", "rhs")))
    register(OpDef("TTypeArgmax", infer_type=lambda p, ins: (list(ins), [np.dtype("float32")])))


@pytest.fixture(autouse=True)
def fresh_names():
    with mxref.name.NameManager():
        yield


def test_pass_is_registered_with_what_it_provides():
    """The pass declares its outputs."""
    assert list_passes()["infer_type"].provides == ("dtype", "dtype_num_unknown_nodes")


def test_types_flow_to_every_input_and_output():
    """One known input types the whole elementwise graph; the graph attribute holds np.dtype."""
    a, b = sym.Variable("a"), sym.Variable("b")
    net = sym.TTypeAdd(a, b)
    g = apply_pass(Graph(net._outputs), "infer_type", dtype_inputs={"b": "float16"})
    assert g.attrs["dtype"] == [np.dtype("float16")] * 3 and g.attrs["dtype_num_unknown_nodes"] == 0
    assert net.infer_type(a=np.float64) == ([np.float64, np.float64], [np.float64], [])


def test_dtype_hint_and_fixed_output_type():
    """__dtype__ (MXNet's type flag) types a variable; a rule may fix its output type."""
    v = sym.Variable("v", dtype="int32")
    assert v.attr("__dtype__") == "4"
    assert sym.TTypeArgmax(v).infer_type() == ([np.int32], [np.float32], [])


def test_conflicting_types_name_the_operator():
    """Two different dtypes on one elementwise op is an error naming node and input."""
    net = sym.TTypeAdd(sym.Variable("a", dtype="float16"), sym.Variable("b"), name="add")
    with pytest.raises(MXNetError, match=r"infer_type: error in operator add \(TTypeAdd\) with "
                                         r"input dtypes \['float16', 'float32'\]"):
        net.infer_type(b="float32")


def test_incomplete_types_warn_and_partial_reports_none():
    """Unknown types: infer_type warns and returns Nones; infer_type_partial reports None."""
    net = sym.TTypeAdd(sym.Variable("a"), sym.Variable("b"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert net.infer_type() == (None, None, None)
    assert "Cannot decide type for the following arguments" in str(caught[0].message)
    assert net.infer_type_partial() == ([None, None], [None], [])
    with pytest.raises(MXNetError, match="unsupported"):
        net.infer_type(a="complex64")
