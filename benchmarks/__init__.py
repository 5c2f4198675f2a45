"""Benchmark scripts that print side-by-side tables (not tests); run them from the repository root."""
