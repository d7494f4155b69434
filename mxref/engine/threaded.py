"""ThreadedEnginePerDevice (placeholder: behaves as the naive engine until the threaded one lands)."""
from .naive import NaiveEngine


class ThreadedEnginePerDevice(NaiveEngine):
    name = "ThreadedEnginePerDevice"
