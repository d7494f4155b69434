"""Fixtures for the kvstore tests (``any_engine`` comes from ``tests/conftest.py``)."""
import pytest


@pytest.fixture(params=["local", "device"])
def kv_type(request):
    """The name of each single-process store type."""
    return request.param
