"""Fixtures of the tensor operator tests; the helpers live in ``ops_check.py``."""
import numpy as np
import pytest


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def fdtype(request):
    """Each test that takes it runs in float32 and float64."""
    return request.param
