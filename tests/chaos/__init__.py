"""Chaos testing of brooq: real worker processes under a schedule of faults, a
recorded history, and a checker that judges the whole history (see docs/reliability.md).

- history: the audit schema (tables and the transition trigger) and the History record
- checker: pure functions over a History: counts of each violation class, and figures
- app:     the worker process (brooq.Worker with an auditing handler; a raw SQL "storm" client)
- harness: the producer, the fault schedules (from a seed), the run, the report
"""
