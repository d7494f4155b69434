"""``engine.set_engine`` drains the old engine, then tells its listeners, then makes the new one."""
from mxref import context, engine, resource


def test_listeners_run_between_the_old_engine_and_the_new(monkeypatch):
    """A listener sees no engine: the old one is drained and gone, the new one not made yet."""
    seen = []
    monkeypatch.setattr(engine, "_switch_listeners", list(engine._switch_listeners))
    engine.on_switch(lambda: seen.append(engine._engine))
    old = engine.engine_type()
    try:
        engine.set_engine("NaiveEngine")
        assert seen == [None]
    finally:
        engine.set_engine(old)
    assert seen == [None, None]


def test_resources_are_made_anew_on_the_new_engine():
    """Resources subscribe through on_switch: after a switch, a resource's variable is the new
    engine's (reusing the old engine's variable would wait on an engine that is stopped)."""
    old = engine.engine_type()
    try:
        engine.set_engine("ThreadedEnginePerDevice")
        first = resource.request(context.cpu(0), "random")
        assert resource.request(context.cpu(0), "random") is first
        engine.set_engine("NaiveEngine")
        second = resource.request(context.cpu(0), "random")
        assert second is not first
        engine.get().wait_for_var(second.var)      # a variable of the naive engine
    finally:
        engine.set_engine(old)
