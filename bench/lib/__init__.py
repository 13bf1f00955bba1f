"""Benchmark helpers: workloads, load generators, process control and reports (not entry points)."""
