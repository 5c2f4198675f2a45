"""Engine adapters (DuckDB, Spark, pyarrow) that translate filters into ``hudi_expr``: later issues."""
