"""Trajectory records, their storage (JSONL + PNG) and the HTML viewer."""
