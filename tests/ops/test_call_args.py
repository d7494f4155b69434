"""positional_layout: how generated operator functions split positional inputs from parameters."""
import pytest

from mxref.base import MXNetError
from mxref.ops import registry
from mxref.ops.call_args import positional_layout


def test_inputs_then_parameters_after_the_slots():
    op = registry.get("FullyConnected")
    names = ["data", "weight", "bias"]
    is_input = lambda a: isinstance(a, str)          # noqa: E731 - strings stand for arrays here
    assert positional_layout(op, "FC", names, ("x", "w", None, 4), is_input)[:2] == (3, 3)
    n_lead, slots, params = positional_layout(op, "FC", names, ("x", "w", "b", 4), is_input)
    assert (n_lead, slots) == (3, 3) and params[0] == "num_hidden"
    assert positional_layout(op, "FC", names, ("x",), is_input)[:2] == (1, 3)


def test_too_many_positionals_name_the_function():
    op = registry.get("relu")
    with pytest.raises(MXNetError, match=r"relu\(\) takes at most 1 positional"):
        positional_layout(op, "relu", ["data"], ("x", 1), lambda a: isinstance(a, str))
