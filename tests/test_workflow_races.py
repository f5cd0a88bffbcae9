"""Workflows under concurrency (docs/architecture.md, "Workflows"): real connections
racing on one child's parents, in the style of test_sql_races.py.

What a user relies on: the settle that finishes the last parent makes the child
ready exactly once, never zero times (a child left waiting for parents that are all
finished would wait forever) and never twice; and a parent settling while its child
is being enqueued is counted, whichever commits first.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import psycopg
from helpers import declare, enqueue
from test_sql_races import Conn, claim_all, race

# A child left waiting although none of its parents is still to finish: the bug both
# races below would leave behind.
STUCK = """
    select c.id from brooq.job c
     where c.state = 'waiting'
       and not exists (select from brooq.job_edge e join brooq.job p on p.id = e.parent
                        where e.child = c.id and p.state not in ('done', 'dead', 'canceled'))
"""


def notifications(conn: Conn, channel_payload: str) -> int:
    """How many NOTIFY brooq with this payload arrived on a listening connection (each
    transaction's are folded into one, so: how many transactions released a child)."""
    return sum(1 for n in conn.notifies(timeout=0.05) if n.payload == channel_payload)


def test_many_parents_finishing_at_once_unblock_their_child_exactly_once(db: str, conn: Conn) -> None:
    """8 connections settle the 8 parents of one child at the same moment, 16 rounds,
    some rounds dead under after_policy run: every round, the child is pending with
    parents_left 0, and exactly one of the 8 settling transactions made it so (its
    NOTIFY, the only one of the child's topic)."""
    declare(conn, "wf.parents")
    declare(conn, "wf.child")
    parents_n, rounds = 8, 16
    with psycopg.connect(db, autocommit=True) as listener:
        listener.execute("listen brooq")
        for r in range(rounds):
            parents = enqueue(conn, "wf.parents", parents_n)
            policy = "run" if r % 2 else "cancel"
            (child,) = conn.execute("select id from brooq.enqueue('wf.child', '{}', after => %s, after_policy => %s)",
                                    (parents, policy)).fetchone()  # type: ignore[misc]
            tokens = claim_all(conn, "w", ["wf.parents"])
            assert set(tokens) == set(parents)
            # under run, some parents die: they count as finished all the same
            outcomes = ["dead" if policy == "run" and i % 3 == 0 else "done" for i in range(parents_n)]

            def settler(i: int, c: Conn, barrier: threading.Barrier, parents: list[int] = parents,
                        tokens: dict[int, int] = tokens, outcomes: list[str] = outcomes) -> str:
                barrier.wait()
                row = c.execute("select brooq.settle(%s, 'w', %s, %s, error => 'x')",
                                (parents[i], tokens[parents[i]], outcomes[i])).fetchone()
                assert row is not None
                return str(row[0])

            ended = race(db, parents_n, settler)
            assert sorted(ended) == sorted(outcomes)
            state, left = conn.execute("select state, parents_left from brooq.job where id = %s",
                                       (child,)).fetchone()  # type: ignore[misc]
            assert (state, left) == ("pending", 0), f"round {r}: the child is {state} with {left} parents left"
            assert notifications(listener, "wf.child") == 1, f"round {r}: not exactly one release"
            # drain the child so the next round's NOTIFY count starts clean
            (tok,) = claim_all(conn, "w", ["wf.child"]).values()
            conn.execute("select brooq.settle(%s, 'w', %s, 'done')", (child, tok))
    assert conn.execute(STUCK).fetchall() == []


def test_a_parent_settling_while_its_child_is_enqueued_is_counted(db: str, conn: Conn) -> None:
    """One connection settles a parent while another enqueues a child of it, each in a
    transaction held open a few milliseconds at random, 40 rounds, half of them for the
    parent's second child: whichever commits first, the child ends pending once a reap
    has run (never left waiting for a parent already done, never counted twice): a
    settle that could not see the child's uncommitted edge leaves that count to the
    reap (brooq._release_missed). Each side starts first in half the rounds (the other a
    few milliseconds later), so that a loaded machine still sees both orders."""
    declare(conn, "wf.p")
    declare(conn, "wf.c")
    orders: dict[str, int] = {"settle first": 0, "enqueue first": 0}
    for r in range(40):
        (parent,) = enqueue(conn, "wf.p", 1)
        if r % 2:  # a second child: the parent has an edge already
            conn.execute("select brooq.enqueue('wf.c', '{}', after => array[%s]::bigint[])", (parent,))
        ((_, token),) = claim_all(conn, "w", ["wf.p"]).items()
        rng = random.Random(r)
        hold = [rng.uniform(0, 0.01), rng.uniform(0, 0.01)]
        lead = [0.0, rng.uniform(0, 0.005)][:: 1 if r % 4 < 2 else -1]

        def work(i: int, c: Conn, barrier: threading.Barrier, parent: int = parent, token: int = token,
                 hold: list[float] = hold, lead: list[float] = lead) -> tuple[float, Any]:
            barrier.wait()
            time.sleep(lead[i])
            with c.transaction():
                if i == 0:
                    out = c.execute("select brooq.settle(%s, 'w', %s, 'done')", (parent, token)).fetchone()
                else:
                    out = c.execute("select id from brooq.enqueue('wf.c', '{}', after => array[%s]::bigint[])",
                                    (parent,)).fetchone()
                time.sleep(hold[i])
            return time.monotonic(), out

        (settled_at, settled), (enqueued_at, (child,)) = race(db, 2, work)
        assert settled == ("done",)
        orders["settle first" if settled_at < enqueued_at else "enqueue first"] += 1
        conn.execute("select brooq.reap()")
        state = conn.execute("select state, parents_left from brooq.job where id = %s", (child,)).fetchone()
        assert state == ("pending", 0), f"round {r}: the child is {state}"
    assert conn.execute(STUCK).fetchall() == []
    assert conn.execute("select count(*) from brooq.job_edge_check").fetchone() == (0,)
    assert min(orders.values()) > 0, f"both orders should have happened: {orders}"
