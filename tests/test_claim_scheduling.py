"""The claim schedule (brooq.scheduling.ClaimSchedule), driven by hand: when the worker
claims next, for how many jobs, from which topics, after a full or partial claim,
finished handlers, written settles, a notification, a reap or a dropped topic. Pure
Python on a made-up clock: no database, no thread."""

from __future__ import annotations

import ast
from pathlib import Path

import brooq
import pytest
from brooq.scheduling import GATHER_GAP, GATHER_MAX, UNSETTLED_CAPACITIES, Ask, ClaimSchedule

POLL = 1.0


def schedule(capacity: int = 10) -> ClaimSchedule:
    return ClaimSchedule(capacity, POLL)


def claim(s: ClaimSchedule, now: float, got: int, *, free: int | None = None, noted: bool = False,
          busy: bool = False) -> Ask:
    """Run one claim through the schedule: ask, then report ``got`` jobs."""
    ask = s.ask(now, s.capacity if free is None else free, noted)
    s.claimed(now, ask, min(got, ask.count), busy)
    return ask


# --- when -------------------------------------------------------------------------------


def test_the_first_claim_is_at_once_for_every_slot() -> None:
    s = schedule(10)
    assert s.claim_at(5.0, free=10, running=False, woken=None) == 5.0
    assert claim(s, 5.0, 0) == Ask(10, capped=False, noted=False, only_notified=False)


def test_no_free_slot_no_claim() -> None:
    s = schedule(4)
    assert s.claim_at(0.0, free=0, running=True, woken=0.0) is None
    assert s.claim_at(0.0, free=-1, running=True, woken=0.0) is None


def test_a_full_claim_claims_again_at_once_an_empty_one_waits_for_the_poll() -> None:
    s = schedule(4)
    claim(s, 1.0, 4)
    assert s.more and s.claim_at(1.0, free=4, running=False, woken=None) == 1.0
    claim(s, 2.0, 0)
    assert not s.more and s.next_poll == 2.0 + POLL
    assert s.claim_at(2.5, free=4, running=False, woken=None) == 2.0 + POLL


def test_a_notification_brings_the_claim_forward_never_back() -> None:
    s = schedule(4)
    claim(s, 0.0, 0)  # the poll is due at 1.0
    assert s.claim_at(0.2, free=4, running=False, woken=0.3) == 0.3
    assert s.claim_at(0.2, free=4, running=False, woken=5.0) == POLL


def test_a_claim_only_a_notification_asked_for_says_so_to_the_listener() -> None:
    s = schedule(4)
    claim(s, 0.0, 0)
    assert s.ask(0.1, 4, noted=True).only_notified
    assert not s.ask(0.1, 4, noted=False).only_notified
    s.ready()  # a reap, a reconnect: jobs known ready, whatever the notification
    assert not s.ask(0.1, 4, noted=True).only_notified


@pytest.mark.parametrize("event", ["ready", "drop"])
def test_a_reconnect_a_reap_or_a_dropped_topic_claims_at_once(event: str) -> None:
    s = schedule(4)
    claim(s, 0.0, 0)
    assert s.claim_at(0.1, free=4, running=False, woken=None) == POLL
    if event == "ready":
        s.ready()
    else:
        s.drop("gone")
    assert s.claim_at(0.1, free=4, running=False, woken=None) == 0.1


# --- gathering finished handlers ---------------------------------------------------------


def test_with_few_slots_free_a_claim_gathers_handlers_as_they_finish() -> None:
    s = schedule(10)
    claim(s, 0.0, 10)  # full: more
    s.finished(1.0)
    s.finished(1.0003)
    # two of ten free (< half), handlers running: wait GATHER_GAP after the last one
    assert s.claim_at(1.0003, free=2, running=True, woken=None) == pytest.approx(1.0003 + GATHER_GAP)
    for t in (1.0006, 1.0009, 1.0012, 1.0015, 1.0018):
        s.finished(t)
    # ... but at most GATHER_MAX after the first
    assert s.claim_at(1.0018, free=8, running=True, woken=None) == 1.0018  # half free: at once
    assert s.claim_at(1.0018, free=4, running=True, woken=None) == pytest.approx(1.0 + GATHER_MAX)


def test_no_gathering_with_half_the_slots_free_or_nothing_running() -> None:
    s = schedule(10)
    claim(s, 0.0, 10)
    s.finished(1.0)
    assert s.claim_at(1.0, free=5, running=True, woken=None) == 1.0
    assert s.claim_at(1.0, free=1, running=False, woken=None) == 1.0


def test_a_claim_ends_the_gathering() -> None:
    s = schedule(10)
    s.finished(1.0)
    claim(s, 1.001, 10)
    assert s.gather_from is None
    assert s.claim_at(1.001, free=1, running=True, woken=None) == 1.001


# --- how many -------------------------------------------------------------------------


def test_outcomes_not_yet_written_hold_slots_back_beyond_three_capacities() -> None:
    s = schedule(5)
    assert UNSETTLED_CAPACITIES == 3
    assert s.free(held=0, unsettled=0) == 5
    assert s.free(held=2, unsettled=15) == 3
    assert s.free(held=0, unsettled=16) == 4
    assert s.free(held=0, unsettled=20) == 0
    assert s.half == 2 and schedule(1).half == 1


def test_settles_after_a_partial_claim_ask_for_as_many_jobs_as_they_wrote() -> None:
    """An ordered group's next job becomes ready when its predecessor settles, which no
    enqueue notifies: the claim comes at once, capped at one job per outcome written."""
    s = schedule(10)
    claim(s, 0.0, 3)  # partial: 3 of 10
    assert s.partial and not s.more and s.next_poll == POLL
    s.settled(2)
    assert s.more and s.freed == 2
    assert s.claim_at(0.1, free=10, running=True, woken=None) == 0.1
    ask = s.ask(0.1, 10, noted=False)
    assert ask == Ask(2, capped=True, noted=False, only_notified=False)
    s.claimed(0.1, ask, 2, busy=True)
    # a capped claim that came back full knows nothing more: the poll stays due at 1.0
    assert not s.more and s.freed == 0 and s.partial and s.next_poll == POLL


def test_settles_after_a_full_claim_ask_for_nothing() -> None:
    s = schedule(4)
    claim(s, 0.0, 4)
    claim(s, 0.5, 0)
    s.settled(4)
    assert not s.more and s.freed == 0


def test_a_notification_or_a_due_poll_lifts_the_cap() -> None:
    s = schedule(10)
    claim(s, 0.0, 3)
    s.settled(2)
    assert s.ask(0.1, 10, noted=True) == Ask(10, capped=False, noted=True, only_notified=False)
    assert s.ask(POLL, 10, noted=False).count == 10  # the poll is due
    assert s.ask(0.1, 6, noted=False).count == 2  # min(free, freed)
    assert s.ask(0.1, 1, noted=False).count == 1


def test_a_partial_claim_with_nothing_left_to_settle_stops_asking() -> None:
    s = schedule(10)
    claim(s, 0.0, 3)
    assert s.partial
    claim(s, 0.5, 0, busy=False)  # nothing held, nothing unwritten: no settle will come
    assert not s.partial
    s.settled(1)
    assert not s.more


def test_an_empty_capped_claim_leaves_the_poll_where_it_was() -> None:
    s = schedule(10)
    claim(s, 0.0, 3)
    s.settled(1)
    claim(s, 0.2, 0, busy=True)
    assert s.next_poll == POLL and s.partial  # capped: partial unchanged, the poll still due


# --- from which topics ----------------------------------------------------------------


def test_a_dropped_topic_is_claimed_from_no_more() -> None:
    s = schedule()
    handled = ["a", "b", "c"]
    assert s.topics(handled) == handled
    s.drop("b")
    assert s.topics(handled) == ["a", "c"]


# --- the worker uses it -----------------------------------------------------------------


def test_a_worker_claims_through_a_schedule_of_its_capacity() -> None:
    worker = brooq.Worker("postgresql://nobody@127.0.0.1:1/none", concurrency=3, prefetch=2,
                          poll_interval=brooq.config.parse_duration("250ms"))
    assert (worker._schedule.capacity, worker._schedule.poll_every) == (5, 0.25)
    assert worker._free() == 5
    worker._settle_thread.in_flight = 16
    assert worker._free() == 4


def test_the_schedule_imports_nothing_of_brooq() -> None:
    """A module below the loop, with no database and no thread: it stays testable as here."""
    tree = ast.parse((Path(brooq.__file__).parent / "scheduling.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.split(".")[0] in ("brooq", "psycopg", "threading")}
