"""The profiler: records engine operations and writes a Chrome-trace JSON."""
