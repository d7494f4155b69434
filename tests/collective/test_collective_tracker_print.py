"""tracker_print writes whole, rank-tagged lines in one write, so the lines of threads (and of
processes sharing a stream) never share a line: every line of a multi-line message is tagged."""
import io
import sys
import threading

from mxref.collective import local_engine


class _CountingOut(io.StringIO):
    def __init__(self):
        super().__init__()
        self.writes = 0

    def write(self, text):
        self.writes += 1
        return super().write(text)


def test_each_line_is_rank_tagged_and_one_message_is_one_write(monkeypatch):
    out = _CountingOut()
    monkeypatch.setattr(sys, "stdout", out)

    def work(eng):
        barrier.wait(10)
        for i in range(50):
            eng.tracker_print(f"step {i}\nloss {i}")

    engines = [local_engine.LocalEngine.__new__(local_engine.LocalEngine) for _ in range(4)]
    for rank, eng in enumerate(engines):
        eng.rank = rank
    barrier = threading.Barrier(4)
    threads = [threading.Thread(target=work, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    lines = out.getvalue().splitlines()
    assert out.writes == 4 * 50
    assert len(lines) == 4 * 50 * 2
    for rank in range(4):
        mine = [line for line in lines if line.startswith(f"[{rank}] ")]
        assert [m for m in mine if "step" in m] == [f"[{rank}] step {i}" for i in range(50)]
        assert [m for m in mine if "loss" in m] == [f"[{rank}] loss {i}" for i in range(50)]
    assert all(line.startswith("[") for line in lines)
