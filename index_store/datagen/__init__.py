"""Tables written for the demo, the tests and the benchmarks (TPC-H data laid out as many files)."""
