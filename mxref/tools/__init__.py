"""Command-line entry points: the demo, the launcher and benchmarks."""
