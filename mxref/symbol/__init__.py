"""Symbolic graphs: ``Symbol``, the graph IR and MXNet-compatible JSON."""
