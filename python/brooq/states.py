"""The queue's words, each spelled once in Python: a job's states, an attempt's outcomes,
the flow limits that hold ready jobs back, and how a worker counts a settled attempt.

The SQL defines the states (the domain brooq.job_state) and the outcomes
(brooq.settle_many); tests/test_packaging.py holds these spellings to it. Every
module that names a state, an outcome or a count imports it from here.
"""

from __future__ import annotations

from typing import Literal, get_args

# A job's state (brooq.job.state): pending -> processing -> done | failed | dead | canceled;
# waiting: for its parents (workflows), then pending or canceled.
JobState = Literal["pending", "processing", "failed", "done", "dead", "canceled", "waiting"]
STATES: tuple[JobState, ...] = get_args(JobState)

# What a claim takes (once available_at has come): new, or failed and retried; not
# waiting, which waits for its parents first.
CLAIMABLE: tuple[JobState, ...] = ("pending", "failed")
# Never written again (brooq.wait returns on them); dead and canceled can be re-driven.
TERMINAL: tuple[JobState, ...] = ("done", "dead", "canceled")
REDRIVABLE: tuple[JobState, ...] = ("dead", "canceled")
# What brooq.cancel can still cancel: any state but the terminal ones.
CANCELABLE: tuple[JobState, ...] = tuple(s for s in STATES if s not in TERMINAL)
# The states brooq.topic_stats counts, as the worker's gauge brooq_jobs{topic,state}.
GAUGED: tuple[JobState, ...] = ("pending", "failed", "processing", "waiting")

# What a worker asks brooq.settle/settle_many to write for an attempt.
OutcomeName = Literal["done", "failed", "delay", "preserve", "cancel", "dead"]
OUTCOMES: tuple[OutcomeName, ...] = get_args(OutcomeName)

# The flow limits that hold ready jobs back: TopicStats.held_by_<limit>, and the
# label of the worker's gauge brooq_jobs_held{topic,limit}.
HELD_BY = ("in_flight", "rate", "group")

# How a worker counts a settled attempt (brooq.TopicSnapshot's and WorkerSnapshot's
# fields, the progress line): by its outcome, except that an answer dead from the
# database counts as dead whatever the outcome (a failure on the last attempt).
CountName = Literal["done", "failed", "retried", "dead", "canceled"]
COUNTED_AS: dict[OutcomeName, CountName] = {
    "done": "done", "failed": "failed", "delay": "retried", "preserve": "retried",
    "cancel": "canceled", "dead": "dead",
}
# The counts of attempts that ended, in the order a snapshot lists them; with
# lease_lost (ended with nothing written), every attempt claimed ends in one of them.
SETTLED_COUNTS: tuple[CountName, ...] = get_args(CountName)
