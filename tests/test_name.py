"""mx.name: NameManager counts per hint and restores on exit, Prefix prepends, and every thread
has its own current manager."""
import threading

from mxref.name import NameManager, Prefix, current


def test_counts_per_hint_and_keeps_given_names():
    """Unnamed symbols get <hint><n> with one counter per hint; given names pass through."""
    m = NameManager()
    assert [m.get(None, "fullyconnected") for _ in range(2)] == ["fullyconnected0", "fullyconnected1"]
    assert m.get(None, "convolution") == "convolution0"
    assert m.get("mine", "convolution") == "mine" and m.get(None, "convolution") == "convolution1"


def test_with_installs_a_fresh_manager_and_restores_the_old_one():
    """Entering a NameManager restarts counting; leaving it gives back the previous counters."""
    outer = current()
    before = outer.get(None, "tname")
    with NameManager() as inner:
        assert current() is inner and inner.get(None, "tname") == "tname0"
        with Prefix("net_"):
            assert current().get(None, "tname") == "net_tname0"
            assert current().get("fc", "x") == "net_fc"
        assert current() is inner
    assert current() is outer
    assert outer.get(None, "tname") == f"tname{int(before[len('tname'):]) + 1}"
    assert NameManager.current is outer


def test_each_thread_has_its_own_manager():
    """A manager entered in one thread is not seen by another."""
    seen = {}

    def worker():
        seen["name"] = current().get(None, "threadop")

    with NameManager():
        current().get(None, "threadop")
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen["name"] == "threadop0"
