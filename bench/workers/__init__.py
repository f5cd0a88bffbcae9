"""Worker programs the benchmark starts as subprocesses, one per system."""
