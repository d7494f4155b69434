"""mx.AttrScope: scoped string attributes, nesting, explicit attributes winning, hidden keys."""
import pytest

import mxref as mx
from mxref.attribute import AttrScope, current, hide_key


def test_nested_scopes_merge_and_restore():
    """Inner scopes add to and override outer ones; explicit attributes win; exit restores."""
    assert current().get(None) == {}
    with AttrScope(ctx_group="dev1", lr_mult="0.1"):
        with AttrScope(lr_mult="0.5"):
            assert current().get({"x": "1"}) == {"ctx_group": "dev1", "lr_mult": "0.5", "x": "1"}
            assert current().get({"lr_mult": "2"})["lr_mult"] == "2"
        assert current().get(None) == {"ctx_group": "dev1", "lr_mult": "0.1"}
    assert current().get(None) == {}
    assert isinstance(AttrScope.current, AttrScope)


def test_values_must_be_strings():
    """AttrScope only takes string values, as MXNet's."""
    with pytest.raises(ValueError, match="must be a string"):
        AttrScope(lr_mult=0.1)


def test_hidden_keys():
    """ctx_group, lr_mult, wd_mult, force_mirroring, mirror_stage are stored as __key__."""
    assert [hide_key(k) for k in ("ctx_group", "lr_mult", "profiler_scope")] == \
        ["__ctx_group__", "__lr_mult__", "profiler_scope"]


def test_hidden_keys_given_to_an_operator_become_its_attributes():
    """``FullyConnected(..., lr_mult=0)`` is MXNet's ``__lr_mult__`` attribute on the node, which the
    weight it creates inherits; an explicit variable keeps its own; the op's params are untouched."""
    bias = mx.sym.Variable("fc1_bias", lr_mult=1.0)
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), bias=bias, name="fc1", num_hidden=3, lr_mult=0,
                               wd_mult=0.5)
    attrs = fc.attr_dict()
    assert attrs["fc1"]["__lr_mult__"] == "0" and attrs["fc1"]["__wd_mult__"] == "0.5"
    assert attrs["fc1_weight"]["__lr_mult__"] == "0" and attrs["fc1_bias"]["__lr_mult__"] == "1.0"
    assert fc.attr("lr_mult") == "0" and "num_hidden" in attrs["fc1"]
    opt = mx.optimizer.SGD(sym=fc)
    assert opt.lr_mult == {"fc1_weight": 0.0, "fc1_bias": 1.0}
