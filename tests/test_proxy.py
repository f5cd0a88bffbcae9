"""The PL/Proxy router of proxy/ (docs/scale-out.md) over four partitions.

Four brooq databases (clones of the session's template) are the partitions; a fifth
database is the router, deployed by sqitch from proxy/. Every router function is
called through the router and checked against what the partitions really hold.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from conftest import ROOT, Server, sqitch, sqitch_target

PROXY = ROOT / "proxy"
STRIDE = 48  # partition p hands out ids from p << 48 (proxy/deploy/cluster.sql)


@dataclass
class Cluster4:
    router: str  # superuser DSN of the router database
    parts: list[str]  # superuser DSNs of the partitions, in partition order
    names: list[str]  # database names: the partitions, then the router

    def holder(self, job_id: int) -> list[int]:
        """The partitions whose brooq.job really holds this id."""
        found = []
        for number, dsn in enumerate(self.parts):
            with psycopg.connect(dsn) as conn:
                if conn.execute("select 1 from brooq.job where id = %s", (job_id,)).fetchone():
                    found.append(number)
        return found


def connstr(server: Server, name: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(server.dsn_for(name))
    info.pop("user", None)  # PL/Proxy then connects as the caller (user=current_user)
    return psycopg.conninfo.make_conninfo(**info)


def build(server: Server, template_db: str, n: int) -> Cluster4:
    with psycopg.connect(server.admin_dsn) as conn:
        if conn.execute("select count(*) from pg_available_extensions where name = 'plproxy'"
                        ).fetchone() != (1,):  # .ci/bootstrap installs it; another server may lack it
            pytest.skip("PL/Proxy is not installed on the test server (postgresql-15-plproxy)")
    tag = uuid.uuid4().hex[:8]
    names = [f"brooq_part{i}_{tag}" for i in range(n)] + [f"brooq_router_{tag}"]
    parts = [server.create_db(name, template=template_db) for name in names[:n]]
    router = server.create_db(names[-1])
    sqitch("deploy", "--verify", sqitch_target(router), cwd=PROXY)
    with psycopg.connect(router, autocommit=True) as conn:
        for number, name in enumerate(names[:n]):
            got = conn.execute("select brooq_proxy.add_partition(%s)", (connstr(server, name),)).fetchone()
            assert got == (number,)
    return Cluster4(router, parts, names)


@pytest.fixture(scope="module")
def four(server: Server, template_db: str) -> Iterator[Cluster4]:
    c = build(server, template_db, 4)
    with psycopg.connect(c.router, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('mail')")
    try:
        yield c
    finally:
        for name in c.names:
            server.drop_db(name)


@pytest.fixture
def router(four: Cluster4) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    with psycopg.connect(four.router, autocommit=True) as conn:
        yield conn


def test_sqitch_revert_and_deploy_again(server: Server, four: Cluster4) -> None:
    name = f"brooq_router_again_{uuid.uuid4().hex[:8]}"
    dsn = server.create_db(name)
    try:
        target = sqitch_target(dsn)
        sqitch("deploy", "--verify", target, cwd=PROXY)
        sqitch("revert", "-y", target, cwd=PROXY)
        with psycopg.connect(dsn) as conn:
            assert conn.execute("select count(*) from pg_namespace where nspname in "
                                "('brooq', 'brooq_proxy', 'plproxy')").fetchone() == (0,)
        sqitch("deploy", "--verify", target, cwd=PROXY)
    finally:
        server.drop_db(name)


def test_add_partition_numbers_and_starts_the_ids(four: Cluster4, router: psycopg.Connection[Any]) -> None:
    rows = router.execute("select number, first_job_id from brooq_proxy.partitions order by number").fetchall()
    assert rows == [(p, (p << STRIDE) + 1) for p in range(4)]
    for p, dsn in enumerate(four.parts):
        with psycopg.connect(dsn) as conn:  # a direct enqueue on partition p lands in its range
            conn.execute("select brooq.declare_topic('direct')")
            (jid,), = conn.execute("select id from brooq.enqueue('direct')").fetchall()
            assert jid >> STRIDE == p
    assert router.execute("select brooq_proxy.partition_of(%s)", ((3 << STRIDE) + 7,)).fetchone() == (3,)


def test_add_partition_refuses_a_duplicate_and_foreign_ids(server: Server, template_db: str,
                                                           four: Cluster4,
                                                           router: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.UniqueViolation, match="already in the cluster"):
        router.execute("select brooq_proxy.add_partition(%s)", (connstr(server, four.names[0]),))
    with pytest.raises(psycopg.errors.NullValueNotAllowed):
        router.execute("select brooq_proxy.add_partition('')")
    # A database whose jobs have ids of partition 0 cannot become partition 4.
    name = f"brooq_used_{uuid.uuid4().hex[:8]}"
    dsn = server.create_db(name, template=template_db)
    try:
        with psycopg.connect(dsn) as conn:
            conn.execute("select brooq.declare_topic('x')")
            conn.execute("select brooq.enqueue('x')")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="outside the range"):
            router.execute("select brooq_proxy.add_partition(%s)", (connstr(server, name),))
        assert router.execute("select count(*) from brooq_proxy.partition").fetchone() == (4,)
    finally:
        server.drop_db(name)


def test_connstr_has_password_reads_both_forms_as_libpq_does(router: psycopg.Connection[Any]) -> None:
    cases = {
        # key/value: any spacing and quoting, any keyword ending in password or secret
        "host=h dbname=brooq password=s3cret": True,
        "host=h dbname=brooq   password  =  's3 cret'": True,
        "password='it\\'s' host=h": True,
        "host=h\tpassword=s3cret": True,
        "host=h\npassword=s3cret": True,
        "host=h PASSWORD=s3cret": True,
        "host=h sslpassword=s3cret": True,
        "host=h oauth_client_secret=s3cret": True,
        "host=h password=": True,
        # URI: user:password@, ?password=, percent-encoded keywords
        "postgresql://u:s3cret@h/brooq": True,
        "postgres://u:s3cret@h:5432,h2:5433/brooq?sslmode=require": True,
        "postgresql://u:s3/cret@h/brooq": False,  # an unescaped / ends the user part: libpq reads no password
        "postgresql://h/brooq?password=s3cret": True,
        "postgresql://h/brooq?sslmode=require&p%61ssw%6Frd=s3cret": True,
        "postgresql://h?password=s3cret": True,
        "POSTGRESQL://u:s3cret@h/brooq": True,
        # no password
        "host=h dbname=password": False,
        "host=h application_name='password=s3cret'": False,
        "host=h application_name=a\\ password=s3cret": False,
        "host=h passfile=/var/lib/postgresql/.pgpass": False,
        "service=brooq_part0": False,
        "postgresql://u@h/brooq?passfile=/x": False,
        "postgresql://u:@h/brooq": False,  # an empty password is none
        "postgresql://h/password": False,
        "postgresql://u%3As3cret@h/brooq": False,  # a user name with a colon
    }
    got = {c: router.execute("select brooq_proxy.connstr_has_password(%s)", (c,)).fetchone()[0] for c in cases}
    assert got == cases


def test_add_partition_refuses_a_password_and_every_role_reads_the_connection_strings(
        server: Server, template_db: str, four: Cluster4, router: psycopg.Connection[Any]) -> None:
    """PL/Proxy reads the connection strings as the caller: every role that may call the
    router reads them, so add_partition refuses one that carries a password."""
    name = f"brooq_pw_{uuid.uuid4().hex[:8]}"
    server.create_db(name, template=template_db)
    info = psycopg.conninfo.conninfo_to_dict(server.dsn_for(name))
    host, port, plain = info["host"], info["port"], connstr(server, name)
    spellings = [
        f"{plain} password=s3cret",  # trust auth ignores it: the old add_partition took it
        f"{plain}   password  =  's3 cret'",
        f"password='s3\\'cret' {plain}",
        f"{plain}\tsslpassword=s3cret",
        f"postgresql://postgres:s3cret@{host}:{port}/{name}?user=postgres",
        f"postgres://{host}:{port}/{name}?user=postgres&password=s3cret",
        f"postgresql://{host}:{port}/{name}?user=postgres&p%61ssw%6Frd=s3cret",
    ]

    def job_ids(part: psycopg.Connection[Any]) -> Any:  # where the partition's job id sequence stands
        (seq,), = part.execute("select pg_get_serial_sequence('brooq.job', 'id')").fetchall()
        return part.execute(f"select last_value, is_called from {seq}").fetchone()

    role = f"proxy_reader_{uuid.uuid4().hex[:6]}"
    server.execute(sql.SQL("create role {} login in role brooq_producer").format(sql.Identifier(role)))
    try:
        with psycopg.connect(server.dsn_for(name)) as part:
            before = job_ids(part)
        for spelling in spellings:
            with pytest.raises(psycopg.errors.InvalidParameterValue) as refused:
                router.execute("select brooq_proxy.add_partition(%s)", (spelling,))
            assert "s3" not in str(refused.value), spelling
            assert refused.value.diag.message_primary == (
                "brooq_proxy.add_partition: a connection string with a password is refused: "
                "every role that may call the router can read it")
            assert ".pgpass" in (refused.value.diag.message_hint or "")
        assert router.execute("select count(*) from brooq_proxy.partition").fetchone() == (4,)
        with psycopg.connect(server.dsn_for(name)) as part:
            assert job_ids(part) == before  # its job ids were not moved
        # What a producer reads: every partition's host, port and database, and no password.
        with psycopg.connect(four.router, user=role, autocommit=True) as producer:
            read = [r[0] for r in producer.execute(
                "select * from plproxy.get_cluster_partitions('brooq')").fetchall()]
        assert read == [connstr(server, n) for n in four.names[:4]]
        assert not any("s3" in c or "password" in c for c in read)
    finally:
        server.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))
        server.drop_db(name)


def test_a_partition_that_asks_a_password_gets_it_from_the_router_s_passfile(
        server: Server, template_db: str) -> None:
    """The documented setup: no password in the connection string, the partition asks
    each login for its password (scram-sha-256), and the router server's libpq finds it
    in a password file (passfile=, the same file format and lookup as ~/.pgpass)."""
    if server.cluster is None:
        pytest.skip("needs the throwaway cluster: the test edits its pg_hba.conf")
    tag = uuid.uuid4().hex[:8]
    part, router_db = f"brooq_pwpart_{tag}", f"brooq_pwrouter_{tag}"
    known, unknown = f"proxy_known_{tag}", f"proxy_unknown_{tag}"
    secret = f"pw-{tag}"
    hba = server.cluster.data / "pg_hba.conf"
    original = hba.read_text()
    passfile = server.cluster.root / f"pgpass-{tag}"  # a directory the server's OS user owns
    info = psycopg.conninfo.conninfo_to_dict(server.dsn_for(part))
    passfile.write_text(f"{info['host']}:{info['port']}:{part}:{known}:{secret}\n")
    passfile.chmod(0o600)  # libpq ignores a password file that others may read
    if os.geteuid() == 0:  # the server runs as postgres (tests/pgcluster.py)
        shutil.chown(passfile, "postgres")
    for role, password in ((known, secret), (unknown, f"other-{tag}")):
        server.execute(sql.SQL("create role {} login password {} in role brooq_producer").format(
            sql.Identifier(role), sql.Literal(password)))
    try:
        server.create_db(part, template=template_db)
        router_dsn = server.create_db(router_db)
        sqitch("deploy", sqitch_target(router_dsn), cwd=PROXY)
        # The partition asks both logins for a password; the superuser stays trusted.
        hba.write_text(f"host {part} {known},{unknown} 127.0.0.1/32 scram-sha-256\n" + original)
        server.execute("select pg_reload_conf()")

        def asks_a_password() -> bool:
            try:
                psycopg.connect(server.dsn_for(part), user=known, passfile="/nonexistent",
                                connect_timeout=2).close()
            except psycopg.OperationalError as e:
                return "password" in str(e)
            return False

        from helpers import wait_for
        wait_for(asks_a_password, timeout=10, what="the partition asks for a password")
        with psycopg.connect(router_dsn, autocommit=True) as owner:
            cs = psycopg.conninfo.make_conninfo(host=info["host"], port=info["port"], dbname=part,
                                                passfile=str(passfile))
            assert owner.execute("select brooq_proxy.add_partition(%s)", (cs,)).fetchone() == (0,)
            owner.execute("select brooq.declare_topic('pw')")
        with psycopg.connect(router_dsn, user=known, autocommit=True) as producer:
            (jid,), = producer.execute("select id from brooq.enqueue('pw')").fetchall()
            assert producer.execute("select * from plproxy.get_cluster_partitions('brooq')").fetchall() == [(cs,)]
        with psycopg.connect(server.dsn_for(part)) as conn:
            assert conn.execute("select topic from brooq.job where id = %s", (jid,)).fetchone() == ("pw",)
        with (psycopg.connect(router_dsn, user=unknown, autocommit=True) as stranger,
              pytest.raises(psycopg.Error, match="password")):  # none in the file for this login
            stranger.execute("select brooq.enqueue('pw')")
    finally:
        hba.write_text(original)
        server.execute("select pg_reload_conf()")
        for name in (router_db, part):
            server.drop_db(name)
        for role in (known, unknown):
            server.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(role)))
        passfile.unlink(missing_ok=True)


def test_enqueue_without_key_spreads_and_the_id_finds_its_partition(
        four: Cluster4, router: psycopg.Connection[Any]) -> None:
    ids = [router.execute("select id from brooq.enqueue('mail', %s)",
                          (psycopg.types.json.Jsonb({"n": i}),)).fetchone()[0] for i in range(40)]
    assert {i >> STRIDE for i in ids} == {0, 1, 2, 3}  # random: 4 * (3/4)^40 < 1e-4 to miss one
    for jid in ids[:8]:
        assert four.holder(jid) == [jid >> STRIDE]
        (fate,) = router.execute("select id, topic, state, payload from brooq.job_fate(%s)", (jid,)).fetchall()
        assert fate[:3] == (jid, "mail", "pending")
    assert router.execute("select * from brooq.job_fate(%s)", ((2 << STRIDE) + 999_999,)).fetchall() == []


def test_enqueue_idempotency_holds_across_partitions(four: Cluster4, router: psycopg.Connection[Any]) -> None:
    first = {k: router.execute("select id, created from brooq.enqueue('mail', '{}', %s)", (k,)).fetchone()
             for k in (f"key-{i}" for i in range(24))}
    assert all(created for _, created in first.values())
    assert len({jid >> STRIDE for jid, _ in first.values()}) > 1  # the keys went to several partitions
    for key, (jid, _) in first.items():
        again = router.execute("select id, created from brooq.enqueue('mail', '{\"x\": 1}', %s)", (key,)).fetchone()
        assert again == (jid, False)
        assert four.holder(jid) == [jid >> STRIDE]
    # enqueue_many meets the same keys on the same partitions, in input order.
    keys = list(first)[:10] + ["fresh-a", "fresh-b"]
    rows = router.execute("select id, created from brooq.enqueue_many('mail', %s::jsonb[], %s)",
                          (["{}"] * len(keys), keys)).fetchall()
    assert rows[:10] == [(first[k][0], False) for k in keys[:10]]
    assert [created for _, created in rows[10:]] == [True, True]


def test_enqueue_many_splits_by_partition_in_input_order(four: Cluster4, router: psycopg.Connection[Any]) -> None:
    payloads = [f'{{"n": {i}}}' for i in range(30)]
    keys = [f"split-{i}" for i in range(30)]
    rows = router.execute("select id, created from brooq.enqueue_many('mail', %s::jsonb[], %s)",
                          (payloads, keys)).fetchall()
    assert len(rows) == 30 and all(created for _, created in rows)
    assert len({jid >> STRIDE for jid, _ in rows}) == 4  # keyed: each on its key's partition
    # without keys, the whole batch goes to one partition (one transaction there)
    unkeyed = router.execute("select id from brooq.enqueue_many('mail', %s::jsonb[])", (payloads,)).fetchall()
    assert len({jid >> STRIDE for jid, in unkeyed}) == 1
    # mixed: the jobs without a key join one of the keyed jobs' partitions
    mixed = router.execute("select id from brooq.enqueue_many('mail', %s::jsonb[], %s)",
                           (payloads[:6], ["mix-a", None, "mix-b", None, None, "mix-c"])).fetchall()
    (loose,) = {mixed[i][0] >> STRIDE for i in (1, 3, 4)}
    assert loose in {mixed[i][0] >> STRIDE for i in (0, 2, 5)}
    for n, (jid, _) in enumerate(rows):  # input order: row n is payload n
        (payload,), = router.execute("select payload from brooq.job_fate(%s)", (jid,)).fetchall()
        assert payload == {"n": n}
    # a key repeated inside the batch: one job, as on one node
    rows = router.execute("select id, created from brooq.enqueue_many('mail', %s::jsonb[], %s)",
                          (["{}", "{}", "{}"], ["dup", None, "dup"])).fetchall()
    assert rows[0][0] == rows[2][0] and [c for _, c in rows] == [True, True, False]
    assert router.execute("select count(*) from brooq.enqueue_many('mail', '{}'::jsonb[])").fetchone() == (0,)


def test_errors_keep_their_sqlstate_through_the_router(router: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.UndefinedObject, match='topic "nope" does not exist'):
        router.execute("select brooq.enqueue('nope')")
    with pytest.raises(psycopg.errors.NullValueNotAllowed):
        router.execute("select brooq.enqueue_many('mail', null)")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        router.execute("select brooq.enqueue_many('mail', array['{}']::jsonb[], array['a', 'b'])")
    with pytest.raises(psycopg.errors.UndefinedObject):
        router.execute("select brooq.pause_topic('nope')")
    with pytest.raises(psycopg.errors.NullValueNotAllowed):
        router.execute("select brooq.cancel(null)")


def test_declare_pause_resume_and_stats_on_every_partition(four: Cluster4,
                                                            router: psycopg.Connection[Any]) -> None:
    (name, attempts, paused), = router.execute(
        "select name, max_attempts, paused from brooq.declare_topic('report', max_attempts => 3)").fetchall()
    assert (name, attempts, paused) == ("report", 3, False)
    for dsn in four.parts:
        with psycopg.connect(dsn) as conn:
            assert conn.execute("select max_attempts from brooq.topic where name = 'report'").fetchone() == (3,)
    router.execute("select brooq.enqueue_many('report', %s::jsonb[])", (["{}"] * 20,))
    assert router.execute("select brooq.pause_topic('report'), brooq.pause_topic('report')").fetchone() == (True, False)
    for dsn in four.parts:
        with psycopg.connect(dsn) as conn:
            assert conn.execute("select paused from brooq.topic where name = 'report'").fetchone() == (True,)
    stats = router.execute("select paused, pending, ready, partitions from brooq.topic_stats "
                           "where topic = 'report'").fetchone()
    assert stats == (True, 20, 20, 4)
    per_part = router.execute("select partition_id, pending from brooq_proxy.partition_topic_stats() "
                              "where topic = 'report' order by partition_id").fetchall()
    assert [p for p, _ in per_part] == [0, 1, 2, 3] and sum(n for _, n in per_part) == 20
    assert router.execute("select brooq.resume_topic('report')").fetchone() == (True,)
    assert router.execute("select bool_or(paused) from brooq.topic_stats").fetchone() == (False,)


def test_cancel_and_retry_go_to_the_partition_of_the_id(four: Cluster4, router: psycopg.Connection[Any]) -> None:
    ids = [r[0] for r in router.execute("select id from brooq.enqueue_many('mail', %s::jsonb[])",
                                        (["{}"] * 12,)).fetchall()]
    for jid in ids:
        assert router.execute("select brooq.cancel(%s)", (jid,)).fetchone() == (True,)
        assert router.execute("select brooq.cancel(%s)", (jid,)).fetchone() == (False,)
        with psycopg.connect(four.parts[jid >> STRIDE]) as conn:
            assert conn.execute("select state from brooq.job where id = %s", (jid,)).fetchone() == ("canceled",)
    assert router.execute("select brooq.retry(%s)", (ids[0],)).fetchone() == (True,)
    (state,), = router.execute("select state from brooq.job_fate(%s)", (ids[0],)).fetchall()
    assert state == "pending"


def test_privileges_are_those_of_a_single_node(server: Server, four: Cluster4) -> None:
    tag = uuid.uuid4().hex[:6]
    roles = {kind: f"proxy_{kind}_{tag}" for kind in ("producer", "worker", "admin")}
    for kind, role in roles.items():
        server.execute(sql.SQL("create role {} login in role {}").format(
            sql.Identifier(role), sql.Identifier(f"brooq_{kind}")))
    try:
        def as_role(kind: str) -> psycopg.Connection[Any]:
            return psycopg.connect(four.router, user=roles[kind], autocommit=True)

        with as_role("producer") as conn:
            (jid,), = conn.execute("select id from brooq.enqueue('mail')").fetchall()
            conn.execute("select brooq.enqueue_many('mail', array['{}']::jsonb[])")
            assert conn.execute("select state from brooq.job_fate(%s)", (jid,)).fetchone() == ("pending",)
            for denied in ("select brooq.declare_topic('mail')", "select brooq.cancel(1)",
                           "select * from brooq.topic_stats", "select * from brooq_proxy.partitions",
                           "select brooq_proxy.add_partition('dbname=x')", "select * from brooq_proxy.resolve()"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(denied)
        with as_role("worker") as conn:
            assert conn.execute("select count(*) from brooq.topic_stats").fetchone()[0] >= 1
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("select brooq.enqueue('mail')")
        with as_role("admin") as conn:
            assert conn.execute("select brooq.cancel(%s)", (jid,)).fetchone() == (True,)
            conn.execute("select brooq.declare_topic('mail')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("select brooq_proxy.add_partition('dbname=x')")
    finally:
        for role in roles.values():
            server.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


# --- a worker over the partitions ------------------------------------------------------

def states(dsn: str) -> dict[str, int]:
    try:
        with psycopg.connect(dsn, connect_timeout=2) as conn:
            return dict(conn.execute("select state, count(*) from brooq.job group by state").fetchall())
    except psycopg.OperationalError:
        return {"unreachable": 1}


def set_reachable(server: Server, name: str, reachable: bool) -> None:
    server.execute(sql.SQL("alter database {} allow_connections {}").format(
        sql.Identifier(name), sql.Literal(reachable)))
    if not reachable:
        server.execute(sql.SQL("select pg_terminate_backend(pid) from pg_stat_activity "
                               "where datname = {} and pid <> pg_backend_pid()").format(sql.Literal(name)))


def test_a_worker_drains_every_partition_while_one_is_down(server: Server, template_db: str,
                                                           tmp_path: Path) -> None:
    from helpers import wait_for

    c = build(server, template_db, 4)
    log = tmp_path / "worker.log"
    proc = None
    try:
        with psycopg.connect(c.router, autocommit=True) as r:
            r.execute("select brooq.declare_topic('echo')")
            ids = [row[0] for row in r.execute("select id from brooq.enqueue_many('echo', %s::jsonb[], %s)",
                                                (["{}"] * 200, [f"e{i}" for i in range(200)])).fetchall()]
        assert {i >> STRIDE for i in ids} == {0, 1, 2, 3}
        set_reachable(server, c.names[3], False)  # down before the worker starts
        with log.open("w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "brooq.tools", "worker", "worker_app:from_env",
                 *[a for dsn in c.parts for a in ("--partition", dsn)],
                 "--concurrency", "2", "--lease", "3s", "--progress", "off"],
                cwd=Path(__file__).parent, stdout=out, stderr=subprocess.STDOUT, text=True)
        # partitions 0-2 drain while 3 is down
        wait_for(lambda: all(states(dsn) == {"done": sum(1 for i in ids if i >> STRIDE == p)}
                             for p, dsn in enumerate(c.parts[:3])),
                 timeout=30, what="partitions 0-2 drained with partition 3 down")
        assert proc.poll() is None, log.read_text()
        set_reachable(server, c.names[3], True)
        wait_for(lambda: states(c.parts[3]) == {"done": sum(1 for i in ids if i >> STRIDE == 3)},
                 timeout=30, what="partition 3 drained once it is back")
        # partition 1 goes away while the worker is connected to it, and comes back
        set_reachable(server, c.names[1], False)
        for p, dsn in enumerate(c.parts):
            if p != 1:
                with psycopg.connect(dsn) as conn:
                    conn.execute("select brooq.enqueue_many('echo', %s::jsonb[])", (["{}"] * 10,))
        wait_for(lambda: all(states(dsn).get("pending", 0) == 0 and states(dsn).get("processing", 0) == 0
                             for p, dsn in enumerate(c.parts) if p != 1),
                 timeout=30, what="the other partitions drained with partition 1 down")
        set_reachable(server, c.names[1], True)
        with psycopg.connect(c.parts[1]) as conn:
            conn.execute("select brooq.enqueue_many('echo', %s::jsonb[])", (["{}"] * 10,))
        wait_for(lambda: set(states(c.parts[1])) == {"done"}, timeout=30,
                 what="partition 1 drained once it is back")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()
        out = log.read_text()
        assert "partition 3 unreachable" in out, out
        assert "lost the database connection" in out, out
        assert out.count("stopped, every job settled") == 4, out
        with psycopg.connect(c.router) as r:
            assert r.execute("select sum(pending + processing) from brooq.topic_stats").fetchone() == (0,)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        for name in c.names:
            set_reachable(server, name, True)
            server.drop_db(name)


def test_the_python_helpers_work_against_the_router(router: psycopg.Connection[Any]) -> None:
    import brooq

    brooq.declare_topic(router, "py", max_attempts=2, max_execution=timedelta(hours=1))
    one = brooq.enqueue(router, "py", {"a": 1}, key="k-py")
    assert one.created and brooq.enqueue(router, "py", {"a": 2}, key="k-py") == (one.id, False)
    many = brooq.enqueue_many(router, "py", [{"n": i} for i in range(8)])
    assert len(many) == 8 and all(e.created for e in many)
    assert brooq.cancel(router, many[0].id) is True
    (py,) = [s for s in brooq.topic_stats(router) if s.topic == "py"]
    assert (py.pending, py.paused) == (8, False)  # 9 enqueued, 1 canceled
    with pytest.raises(brooq.UnknownTopic):
        brooq.enqueue(router, "missing", {})
    altered = router.execute("select max_attempts, rate, per from brooq.alter_topic('py', rate => 5)").fetchone()
    assert altered == (2, 5, timedelta(seconds=1))
    assert router.execute("select max_attempts, rate, max_execution, partitions from brooq.topics where name = 'py'"
                          ).fetchall() == [(2, 5, timedelta(hours=1), 4)]  # the same on every partition


def test_an_ordered_group_stays_on_one_partition(four: Cluster4, router: psycopg.Connection[Any]) -> None:
    one = [router.execute("select id from brooq.enqueue('mail', '{}', group_key => 'g-1')").fetchone()[0]
           for _ in range(6)]
    rows = router.execute("select id from brooq.enqueue_many('mail', %s::jsonb[], group_keys => %s)",
                          (["{}"] * 8, ["g-1", "g-2"] * 4)).fetchall()
    assert len({i >> STRIDE for i in one + [r[0] for r in rows[::2]]}) == 1  # group g-1: one partition
    assert len({r[0] >> STRIDE for r in rows[1::2]}) == 1  # group g-2: one partition
    (group,), = router.execute("select group_key from brooq.job_fate(%s)", (one[0],)).fetchall()
    assert group == "g-1"
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        router.execute("select brooq.enqueue_many('mail', array['{}']::jsonb[], group_keys => array['a', 'b'])")


def test_a_workflow_stays_on_one_partition(four: Cluster4, router: psycopg.Connection[Any]) -> None:
    """A child goes to its first parent's partition, an enqueue_many with edges whole to one."""
    (parent,) = router.execute("select id from brooq.enqueue('mail', '{}')").fetchone()
    (child,) = router.execute("select id from brooq.enqueue('mail', '{}', after => array[%s]::bigint[])",
                              (parent,)).fetchone()
    rows = router.execute("select id from brooq.enqueue_many('mail', array['{}', '{}']::jsonb[], "
                          "after_child => array[1, 2], after_parent => array[%s, -1]::bigint[])", (parent,)).fetchall()
    assert {i >> STRIDE for i in [child, *(r[0] for r in rows)]} == {parent >> STRIDE}
    (state,), = router.execute("select state from brooq.job_fate(%s)", (child,)).fetchall()
    assert state == "waiting"


def test_the_router_mirrors_the_node_signatures(four: Cluster4, router: psycopg.Connection[Any]) -> None:
    """A change of these functions' arguments in sql/ needs the same in proxy/deploy/router.sql
    (a client that names the new argument would fail through the router)."""
    query = ("select p.proname, pg_get_function_arguments(p.oid) from pg_proc p "
             "where p.pronamespace = 'brooq'::regnamespace and p.proname = any(%s) order by 1")
    names = ["enqueue", "enqueue_many", "declare_topic", "alter_topic", "pause_topic", "resume_topic",
             "cancel", "retry"]
    with psycopg.connect(four.parts[0]) as node:
        expected = node.execute(query, (names,)).fetchall()
    assert router.execute(query, (names,)).fetchall() == expected, "update proxy/deploy/router.sql"
    # The router stages a batch with the same arguments, but for the edges: a batch with
    # edges (a workflow) goes whole to one partition, never staged.
    with psycopg.connect(four.parts[0]) as node:
        staged, many = node.execute("select pg_get_function_arguments('brooq.enqueue_staged'::regproc), "
                                    "pg_get_function_arguments('brooq.enqueue_many'::regproc)").fetchone()
    edges = ", after_child integer[] DEFAULT NULL::integer[], after_parent bigint[] DEFAULT NULL::bigint[], " \
            "after_policy text DEFAULT 'cancel'::text"
    assert many.endswith(edges), "the edges are enqueue_many's last arguments"
    assert staged == f"call_id uuid, {many.removesuffix(edges)}", "update sql/function_enqueue_staged.sql"
    topic_cols = ("select attname from pg_attribute where attrelid = 'brooq.topic'::regclass "
                  "and attnum > 0 and not attisdropped order by attnum")
    with psycopg.connect(four.parts[0]) as node:
        node_cols = [r[0] for r in node.execute(topic_cols).fetchall()]
    router_cols = [r[0] for r in router.execute(
        "select attname from pg_attribute where attrelid = 'brooq.topic'::regclass::oid "
        "and attnum > 0 order by attnum").fetchall()]
    assert router_cols == node_cols, "update the type brooq.topic in proxy/deploy/router.sql"
    view_cols = ("select attname from pg_attribute where attrelid = 'brooq.topics'::regclass "
                 "and attnum > 0 and not attisdropped order by attnum")
    with psycopg.connect(four.parts[0]) as node:
        node_view = [r[0] for r in node.execute(view_cols).fetchall()]
    router_view = [r[0] for r in router.execute(view_cols).fetchall()]
    assert router_view == [*node_view, "partitions"], "update the view brooq.topics in proxy/deploy/router.sql"


# --- a bulk enqueue over several partitions is all or nothing (docs/scale-out.md) -------

def jobs_of(c: Cluster4, topic: str, skip: int | None = None) -> list[dict[str, int]]:
    """Per partition (but skip): its jobs of the topic by state, 'staged' when no claim reaches them."""
    found = []
    for dsn in [d for p, d in enumerate(c.parts) if p != skip]:
        with psycopg.connect(dsn) as conn:
            found.append(dict(conn.execute(
                "select case when available_at = '9999-12-30 00:00:00+00' then 'staged' else state end, count(*) "
                "from brooq.job where topic = %s group by 1", (topic,)).fetchall()))
    return found


def claimable(c: Cluster4, topic: str) -> int:
    """How many jobs of the topic a claim takes now, on every partition (rolled back)."""
    total = 0
    for dsn in c.parts:
        with psycopg.connect(dsn) as conn:
            total += len(conn.execute("select id from brooq.claim('probe', array[%s], 1000)", (topic,)).fetchall())
            conn.rollback()
    return total


def test_a_bulk_enqueue_that_a_partition_refuses_leaves_no_job(four: Cluster4,
                                                               router: psycopg.Connection[Any]) -> None:
    router.execute("select brooq.declare_topic('atom', max_payload_bytes => 100)")
    payloads = ['{"n": 1}'] * 40
    payloads[20] = '{"big": "' + "x" * 200 + '"}'
    keys = [f"atom-{i}" for i in range(40)]  # keyed: the batch spreads over every partition
    with pytest.raises(psycopg.errors.ProgramLimitExceeded, match="larger than the 100 bytes"):
        router.execute("select brooq.enqueue_many('atom', %s::jsonb[], %s)", (payloads, keys))
    # a topic one partition lacks (declared on the others directly)
    for dsn in four.parts[:3]:
        with psycopg.connect(dsn) as conn:
            conn.execute("select brooq.declare_topic('atom.half')")
    with pytest.raises(psycopg.errors.UndefinedObject, match='topic "atom.half" does not exist'):
        router.execute("select brooq.enqueue_many('atom.half', %s::jsonb[], %s)", (['{}'] * 40, keys))
    assert jobs_of(four, "atom") == [{}] * 4 and jobs_of(four, "atom.half") == [{}] * 4
    # the same batch without the big payload: every job, claimable
    payloads[20] = '{"n": 1}'
    assert len(router.execute("select brooq.enqueue_many('atom', %s::jsonb[], %s)", (payloads, keys)).fetchall()) == 40
    assert claimable(four, "atom") == 40
    # without keys the batch is one transaction on one partition: refused there, nothing anywhere
    payloads[7] = '{"big": "' + "y" * 200 + '"}'
    with pytest.raises(psycopg.errors.ProgramLimitExceeded):
        router.execute("select brooq.enqueue_many('atom', %s::jsonb[])", (payloads,))
    assert claimable(four, "atom") == 40


def test_a_bulk_enqueue_with_a_partition_down_leaves_no_job_and_says_retry(
        server: Server, four: Cluster4, router: psycopg.Connection[Any]) -> None:
    router.execute("select brooq.declare_topic('atom.down')")
    (key,), = router.execute("select k from generate_series(1, 200) g, lateral (select 'k' || g as k) x "
                             "where abs(brooq_proxy.route('atom.down', x.k, null) % 4) = 2 limit 1").fetchall()
    set_reachable(server, four.names[2], False)
    try:
        # the router's open connection to partition 2 was cut (08006), then it cannot connect (08001)
        for sqlstate in ("08006", "08001"):
            with pytest.raises(psycopg.OperationalError) as down:
                router.execute("select brooq.enqueue_many('atom.down', %s::jsonb[], %s)",
                               (['{}'] * 40, [f"down-{i}" for i in range(40)]))
            assert down.value.sqlstate == sqlstate, down.value
            assert "no job of this call runs" in (down.value.diag.message_hint or "")
        assert "a partition could not be reached: " in str(down.value)
        assert jobs_of(four, "atom.down", skip=2) == [{}] * 3
        # every router function says "retry" by its class, never XX000
        for call in ("select brooq.enqueue('atom.down', '{}', %s)",
                     "select brooq.declare_topic('atom.down')", "select brooq.pause_topic('atom.down')",
                     "select * from brooq.topic_stats", "select brooq.cancel(%s)"):
            args = (key,) if "enqueue" in call else ((2 << STRIDE) + 1,) if "cancel" in call else ()
            with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection):
                router.execute(call, args)
    finally:
        set_reachable(server, four.names[2], True)
    assert router.execute("select * from brooq_proxy.resolve('0 seconds')").fetchall() == []
    assert jobs_of(four, "atom.down") == [{}] * 4


@pytest.fixture
def paused_on_part2(four: Cluster4) -> Iterator[psycopg.Connection[Any]]:
    """Partition 2 stops in a trigger of brooq.staged_call (on the operation the test names)
    until the connection yielded releases its advisory lock 30030."""
    with psycopg.connect(four.parts[2], autocommit=True) as hold:
        hold.execute("select pg_advisory_lock(30030)")
        hold.execute("""create or replace function public.pause_here() returns trigger language plpgsql as $$
                        begin perform pg_advisory_xact_lock_shared(30030); return new; end $$""")
        try:
            yield hold
        finally:
            hold.execute("drop trigger if exists pause_here on brooq.staged_call")
            hold.execute("drop function if exists public.pause_here()")
            hold.execute("select pg_advisory_unlock_all()")


def kill_mid_call(four: Cluster4, topic: str, paused: psycopg.Connection[Any]) -> None:
    """An enqueue_many of 40 jobs through the router, its session terminated while partition
    2 waits in the trigger."""
    from helpers import wait_for

    caller = psycopg.connect(four.router, autocommit=True)
    failed: list[BaseException] = []

    def call() -> None:
        try:
            caller.execute("select brooq.enqueue_many(%s, %s::jsonb[], %s)",
                           (topic, ['{}'] * 40, [f"{topic}-{i}" for i in range(40)]))
        except BaseException as e:  # noqa: BLE001 - the terminated session's error, checked below
            failed.append(e)

    thread = threading.Thread(target=call)
    thread.start()
    wait_for(lambda: paused.execute("select count(*) from pg_stat_activity where wait_event = 'advisory' "
                                    "and datname = current_database()").fetchone() == (1,),
             timeout=10, what="partition 2 waiting in the trigger")
    with psycopg.connect(four.router, autocommit=True) as admin:
        admin.execute("select pg_terminate_backend(%s)", (caller.info.backend_pid,))
    thread.join(timeout=10)
    assert failed and isinstance(failed[0], psycopg.OperationalError), failed
    caller.close()


def test_a_router_killed_while_staging_leaves_no_job(four: Cluster4, router: psycopg.Connection[Any],
                                                    paused_on_part2: psycopg.Connection[Any]) -> None:
    router.execute("select brooq.declare_topic('atom.kill1')")
    paused_on_part2.execute("create trigger pause_here before insert on brooq.staged_call "
                            "for each row execute function public.pause_here()")
    kill_mid_call(four, "atom.kill1", paused_on_part2)
    assert claimable(four, "atom.kill1") == 0  # staged on the others: no claim reaches them
    paused_on_part2.execute("select pg_advisory_unlock(30030)")  # partition 2's share goes on, or not
    assert claimable(four, "atom.kill1") == 0
    (resolved,) = router.execute("select call_id, outcome, unreachable from brooq_proxy.resolve('0 seconds')").fetchall()
    assert resolved[1:] == ("discarded", [])
    assert jobs_of(four, "atom.kill1") == [{}] * 4
    assert router.execute("select * from brooq_proxy.resolve('0 seconds')").fetchall() == []


def test_a_router_killed_while_publishing_gets_every_job_published(
        four: Cluster4, router: psycopg.Connection[Any], paused_on_part2: psycopg.Connection[Any]) -> None:
    router.execute("select brooq.declare_topic('atom.kill2')")
    paused_on_part2.execute("create trigger pause_here before update on brooq.staged_call "
                            "for each row when (new.state = 'published') execute function public.pause_here()")
    kill_mid_call(four, "atom.kill2", paused_on_part2)
    # partition 2's publish never happens: its backend goes too
    paused_on_part2.execute("select pg_terminate_backend(pid) from pg_stat_activity "
                            "where wait_event = 'advisory' and datname = current_database()")
    paused_on_part2.execute("drop trigger pause_here on brooq.staged_call")
    from helpers import wait_for

    # partition 2 holds its share staged; the others published theirs (a publish the
    # router sent before it died may commit a moment later)
    per_part = wait_for(lambda: (p := jobs_of(four, "atom.kill2")) and set(p[2]) == {"staged"}
                        and any(set(q) == {"pending"} for i, q in enumerate(p) if i != 2) and p,
                        timeout=5, what="partition 2 staged, another published")
    assert set(per_part[2]) == {"staged"}
    (resolved,) = router.execute("select outcome, unreachable from brooq_proxy.resolve('0 seconds')").fetchall()
    assert resolved == ("published", [])
    assert claimable(four, "atom.kill2") == 40  # all of them, none lost


def test_a_resolver_that_fences_a_slow_call_leaves_none_of_it(
        four: Cluster4, router: psycopg.Connection[Any], paused_on_part2: psycopg.Connection[Any]) -> None:
    """resolve() takes over a call still under way (older_than 0): the call fails, with
    nothing of it enqueued anywhere, instead of half of it being published."""
    from helpers import wait_for

    router.execute("select brooq.declare_topic('atom.race')")
    paused_on_part2.execute("create trigger pause_here before insert on brooq.staged_call "
                            "for each row when (new.state = 'staged') execute function public.pause_here()")
    failed: list[BaseException] = []

    def call() -> None:
        with psycopg.connect(four.router, autocommit=True) as caller:
            try:
                caller.execute("select brooq.enqueue_many('atom.race', %s::jsonb[], %s)",
                               (['{}'] * 40, [f"race-{i}" for i in range(40)]))
            except psycopg.Error as e:
                failed.append(e)

    thread = threading.Thread(target=call)
    thread.start()
    wait_for(lambda: paused_on_part2.execute("select count(*) from pg_stat_activity where wait_event = 'advisory' "
                                             "and datname = current_database()").fetchone() == (1,),
             timeout=10, what="partition 2 waiting in the trigger")
    # the other partitions' shares committed (staged), or resolve() may not see the call yet
    wait_for(lambda: all(set(q) == {"staged"} for i, q in enumerate(jobs_of(four, "atom.race")) if i != 2),
             timeout=10, what="the other partitions' shares staged")
    (resolved,) = router.execute("select outcome, unreachable from brooq_proxy.resolve('0 seconds')").fetchall()
    assert resolved == ("discarded", [])
    paused_on_part2.execute("select pg_advisory_unlock(30030)")
    thread.join(timeout=10)
    assert len(failed) == 1 and isinstance(failed[0], psycopg.errors.SerializationFailure), failed
    assert "it was abandoned" in str(failed[0])
    assert jobs_of(four, "atom.race") == [{}] * 4


# --- a partition added under load joins with the cluster's topics ------------------------

def test_a_fifth_partition_added_under_load_takes_traffic_with_the_cluster_s_topics(
        server: Server, template_db: str) -> None:
    c = build(server, template_db, 4)
    fifth = f"brooq_part4_{uuid.uuid4().hex[:8]}"
    errors: list[BaseException] = []
    enqueued = [0]
    stop = threading.Event()
    try:
        with psycopg.connect(c.router, autocommit=True) as r:
            r.execute("select brooq.declare_topic('load', max_attempts => 3, backoff_base => '2 seconds', "
                      "max_payload_bytes => 4096, max_in_flight => 2, max_lease => '10 minutes', "
                      "retain_done => false)")
            r.execute("select brooq.declare_topic('held', max_attempts => 7)")
            r.execute("select brooq.pause_topic('held')")
            r.execute("select brooq.alter_topic('held', rate => 5, per => '2 seconds')")
        fifth_dsn = server.create_db(fifth, template=template_db)

        def produce(bulk: bool) -> None:
            with psycopg.connect(c.router, autocommit=True) as p:
                n = 0
                while not stop.is_set():
                    try:
                        if bulk:  # half of the batches keyed: spread over the partitions, staged
                            keys = [f"{uuid.uuid4().hex}" for _ in range(20)] if n % 4 < 2 else None
                            p.execute("select brooq.enqueue_many(%s, %s::jsonb[], %s)",
                                      ("load" if n % 2 else "held", ['{}'] * 20, keys))
                            enqueued[0] += 20
                        else:
                            p.execute("select brooq.enqueue(%s, '{}')", ("load" if n % 2 else "held",))
                            enqueued[0] += 1
                    except psycopg.Error as e:
                        errors.append(e)
                    n += 1

        producers = [threading.Thread(target=produce, args=(bulk,)) for bulk in (False, True, False)]
        for t in producers:
            t.start()
        time.sleep(0.5)
        with psycopg.connect(c.router, autocommit=True) as r:
            assert r.execute("select brooq_proxy.add_partition(%s)", (connstr(server, fifth),)).fetchone() == (4,)
        time.sleep(1.0)  # traffic reaches the new partition
        stop.set()
        for t in producers:
            t.join(timeout=10)
        assert errors == [], errors[:3]
        topics = ("select name, max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify, "
                  "max_lease, max_lease_losses, max_in_flight, rate, per, max_execution, retain_done, "
                  "retain_payload, paused from brooq.topics order by name")
        with psycopg.connect(c.parts[0]) as first, psycopg.connect(fifth_dsn) as new:
            assert new.execute(topics).fetchall() == first.execute(topics).fetchall()
            landed = new.execute("select count(*) from brooq.job").fetchone()[0]
            assert landed > 0, "no enqueue reached the fifth partition"
            # its claims follow the settings: max_in_flight 2, max_attempts 3, 'held' paused
            claimed = new.execute("select max_attempts from brooq.claim('w5', array['load', 'held'], 50)").fetchall()
            assert claimed == [(3,)] * 2, claimed
        with psycopg.connect(c.router) as r:
            assert r.execute("select count(*), min(partitions) from brooq.topics").fetchone() == (2, 5)
    finally:
        stop.set()
        for name in [*c.names, fifth]:
            server.drop_db(name)
