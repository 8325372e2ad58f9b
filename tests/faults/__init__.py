"""Fault scenarios shared by tests/e2e/test_faults.py and benchmarks/faults.py."""
