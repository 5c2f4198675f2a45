"""Engine adapters: filters of DuckDB, Spark and pyarrow into ``hudi_expr``, and reads of only the
files the index keeps (``adapters.duckdb``, ``adapters.spark``, ``adapters.pyarrow``), plus the
``hudi-index`` command line (``adapters.cli``), which needs the DuckDB adapter for SQL."""
