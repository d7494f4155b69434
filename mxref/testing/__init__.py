"""The pieces of ``mxref.test_utils``, one concern per module; import them from ``mxref.test_utils``."""
