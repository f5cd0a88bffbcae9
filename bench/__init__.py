"""brooq's benchmark: brooq against procrastinate, pgqueuer and graphile-worker.

Run it with `bash bench/run` (see docs/performance.md). The orchestrator lives
in bench/main.py; each system's enqueue and worker programs in bench/systems.py
and bench/workers/.
"""
