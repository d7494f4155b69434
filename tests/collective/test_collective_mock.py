"""The mock engine: Rabit's mock= kill points, parsed from lists or strings, fired on the chosen attempt."""
import numpy as np
import pytest

from mxref import collective
from mxref.collective.local_engine import LocalWorld
from mxref.collective.mock_engine import MockEngine, MockKill


def test_kill_points_from_a_list_a_string_or_the_environment(monkeypatch):
    """'rank,version,seqno[,ndeath];...' is Rabit's syntax; ndeath defaults to the first attempt."""
    assert MockEngine(mock="1,2,3;0,0,1,2", world=LocalWorld(1), rank=0).kill_points == \
        {(1, 2, 3, 0), (0, 0, 1, 2)}
    assert MockEngine(mock=[(0, 1, 2)], world=LocalWorld(1), rank=0).kill_points == {(0, 1, 2, 0)}
    monkeypatch.setenv("MXREF_MOCK", "0,0,0")
    assert MockEngine(world=LocalWorld(1), rank=0).kill_points == {(0, 0, 0, 0)}


def job():
    collective.load_checkpoint()
    a = np.ones(2)
    collective.allreduce(a, collective.SUM)
    collective.checkpoint(a)
    return collective.version_number()


def test_a_kill_without_restarts_ends_the_job_with_the_kill():
    """With max_restarts=0 the killed rank is not revived and run_local reports where it died."""
    with pytest.raises(MockKill, match="rank 1 killed at version 0 seqno 1"):
        collective.run_local(2, job, engine="mock", mock=[(1, 0, 1)], timeout=5)


def test_kill_fires_only_on_its_attempt():
    """A point with ndeath=1 spares the first life and kills the restarted one, then the job ends."""
    assert collective.run_local(2, job, engine="mock", mock=[(0, 0, 0, 1)]) == [1, 1]
    assert collective.run_local(2, job, engine="mock", mock=[(0, 0, 0, 0), (0, 0, 0, 1)],
                                max_restarts=2) == [1, 1]
