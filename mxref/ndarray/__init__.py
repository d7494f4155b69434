"""NDArray: an n-dimensional array whose every operation is an engine operation."""
