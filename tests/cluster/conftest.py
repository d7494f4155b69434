"""The 2-host cluster the tests in this folder share (made once, taken down at the end)."""
import shutil
import tempfile
from pathlib import Path

import pytest
from cluster_support import PREFIX, SUBNET

from mxref.tools import cluster


@pytest.fixture(scope="session")
def hosts():
    """Two hosts, unlimited links, as ``(state, folder)``; ``down`` runs however the tests end."""
    folder = Path(tempfile.mkdtemp(prefix="mxref-cluster-test-"))
    (folder / "reports").mkdir()
    try:
        state = cluster.up(2, str(folder / "hosts.txt"), "unlimited", SUBNET, PREFIX, folder)
        yield state, folder
    finally:
        cluster.down(folder)
        shutil.rmtree(folder, ignore_errors=True)
