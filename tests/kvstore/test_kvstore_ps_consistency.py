"""The consistency-model registry of the parameter server: names, aliases, options, refusals."""
import pytest

import mxref as mx
from mxref.kvstore.ps.consistency import (
    Consistency,
    consistency_names,
    get_consistency,
    model_for_store,
    register_consistency,
)


def test_the_three_models_and_their_store_names():
    """BSP, ASP and SSP are registered; every store type name of theirs maps to its model."""
    assert {"dist_sync", "dist_async", "dist_ssp"} <= set(consistency_names())
    for name, model in [("dist_sync", "dist_sync"), ("dist", "dist_sync"), ("dist_sync_device", "dist_sync"),
                        ("dist_device_sync", "dist_sync"), ("dist_async", "dist_async"),
                        ("dist_async_device", "dist_async"), ("dist_device_async", "dist_async"),
                        ("dist_ssp", "dist_ssp"), ("DIST_SSP:7", "dist_ssp")]:
        assert model_for_store(name).name == model, name
    assert model_for_store("dist_sync_allreduce") is None and model_for_store("local") is None


def test_what_each_model_declares():
    """Only sync leaves pulls uncopied; async and ssp need a server optimizer."""
    sync, asp, ssp = (get_consistency(n) for n in ("dist_sync", "dist_async", "dist_ssp"))
    assert (sync.needs_updater, asp.needs_updater, ssp.needs_updater) == (False, True, True)
    assert (sync.snapshot_pulls, asp.snapshot_pulls, ssp.snapshot_pulls) == (False, True, True)
    assert (sync.capabilities, asp.capabilities, ssp.capabilities) == (
        {"synchronous"}, {"async"}, frozenset())


def test_options_come_from_the_name(monkeypatch):
    """ssp: tau from 'dist_ssp:4', else MXREF_KV_STALENESS, else 2; others take no options."""
    ssp = get_consistency("dist_ssp")
    monkeypatch.delenv("MXREF_KV_STALENESS", raising=False)
    assert ssp.options("dist_ssp") == {"tau": 2} and ssp.options("dist_ssp:4") == {"tau": 4}
    monkeypatch.setenv("MXREF_KV_STALENESS", "5")
    assert ssp.options("dist_ssp") == {"tau": 5}
    with pytest.raises(mx.MXNetError, match="bad staleness in 'dist_ssp:x'"):
        ssp.options("dist_ssp:x")
    with pytest.raises(mx.MXNetError, match="staleness must be >= 0"):
        ssp.options("dist_ssp:-1")
    assert get_consistency("dist_sync").options("dist_sync") == {}
    with pytest.raises(mx.MXNetError, match="dist_sync takes no options"):
        get_consistency("dist_sync").options("dist_sync:3")


def test_refusals():
    """Unknown names list what is registered; only Consistency subclasses register."""
    with pytest.raises(mx.MXNetError, match="unknown consistency model 'dist_nope'.*dist_async"):
        get_consistency("dist_nope")
    with pytest.raises(mx.MXNetError, match="expected a Consistency subclass"):
        register_consistency("dist_bad")(object)
    with pytest.raises(mx.MXNetError, match="unknown options"):
        get_consistency("dist_async")(None, [1, 2], tau=3)


def test_registering_a_model_makes_its_store_name():
    """A new model is found by its name and aliases (create() then makes a store using it)."""
    @register_consistency("dist_test_only", "dist_test_alias")
    class TestOnly(Consistency):
        def push(self, msg, active):
            self.part.reply(msg.src, msg.rid)
    assert model_for_store("dist_test_alias:1") is TestOnly and get_consistency("dist_test_only") is TestOnly
