"""Benchmark harnesses and reports."""
