"""mx.AttrScope: scoped string attributes, nesting, explicit attributes winning, hidden keys."""
import pytest

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
