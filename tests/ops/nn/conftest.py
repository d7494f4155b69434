"""Shared fixtures of the operator tests; the helpers live in ``nn_check.py``."""
import os

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A seeded generator; the seed is printed and replayable with MXREF_TEST_SEED."""
    seed = int(os.environ.get("MXREF_TEST_SEED", "0"))
    print(f"seed={seed} (replay with MXREF_TEST_SEED={seed})")
    return np.random.default_rng(seed)
