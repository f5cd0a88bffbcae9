"""brooq.contrib.django against a real PostgreSQL, with Django itself: the project of
docs/django.md (tests/django_project) enqueues in its view's transaction, its
`manage.py brooq_worker` drains the job, `manage.py brooq_deploy` deploys, and a
database that is not PostgreSQL on psycopg 3 is refused by name.

Django is set up once in this process (its settings are global), on a database of
this module; the commands run as subprocesses, as a user runs them."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brooq
import brooq.contrib.django
import django
import psycopg
import pytest
from conftest import ROOT, Server


PROJECT = ROOT / "tests" / "django_project"
GUIDE = ROOT / "docs" / "django.md"
PASSWORD = "dj4ngo-S3cret-pw"  # trust auth ignores it; it must show nowhere


@pytest.fixture(scope="module")
def app_env(server: Server, template_db: str) -> Iterator[dict[str, str]]:
    """A database with brooq deployed, Django set up on it in this process, the
    project's tables migrated; the environment the project's settings read."""
    name = f"brooq_django_{uuid.uuid4().hex[:10]}"
    info = psycopg.conninfo.conninfo_to_dict(server.create_db(name, template=template_db))
    env = {"APP_DB_NAME": name, "APP_DB_USER": str(info.get("user", "postgres")),
           "APP_DB_HOST": str(info.get("host", "127.0.0.1")), "APP_DB_PORT": str(info.get("port", 5432)),
           "APP_DB_PASSWORD": PASSWORD, "DJANGO_SETTINGS_MODULE": "mysite.settings"}
    patch = pytest.MonkeyPatch()
    for key, value in env.items():
        patch.setenv(key, value)
    patch.syspath_prepend(str(PROJECT))
    django.setup()
    from django.core.management import call_command
    from django.db import connections

    migrated = io.StringIO()
    call_command("migrate", stdout=migrated)  # shop's 0002 deploys brooq: up to date here
    assert "Applying shop.0002_brooq_schema... OK" in migrated.getvalue()
    with psycopg.connect(server.dsn_for(name), autocommit=True) as conn:
        brooq.declare_topic(conn, "email", max_attempts=5)
    try:
        yield env
    finally:
        connections.close_all()
        patch.undo()
        server.drop_db(name)


@pytest.fixture
def dsn(server: Server, app_env: dict[str, str]) -> str:
    return server.dsn_for(app_env["APP_DB_NAME"])


def manage(env: dict[str, str], *args: str, **kwargs: Any) -> subprocess.Popen[str]:
    """`python manage.py ARGS` in the project's directory, in the project's environment."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")} | env
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=PROJECT, env=full, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def jobs_of(dsn: str, topic: str = "email") -> list[brooq.JobFate]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return brooq.list_jobs(conn, topic=topic)


def test_the_guide_shows_the_projects_own_files() -> None:
    """Every ```python block of docs/django.md opening with `# <path>` is in that file of
    tests/django_project, which the tests below run."""
    blocks = re.findall(r"^```python\n# (\S+)\n(.*?)^```", GUIDE.read_text(), flags=re.MULTILINE | re.DOTALL)
    assert {path for path, _ in blocks} >= {"mysite/settings.py", "shop/views.py", "shop/jobs.py"}
    for path, code in blocks:
        assert code in (PROJECT / path).read_text(), f"docs/django.md: {path} is not the project's"


def test_a_view_commits_the_order_and_its_job_together(dsn: str) -> None:
    from django.test import Client
    from shop.models import Order

    answer = Client().post("/orders", {"email": "ann@example.com"}).json()
    assert Order.objects.filter(id=answer["order"]).exists()
    job = brooq.contrib.django.get_job(answer["job"])
    assert job is not None and (job.state, job.payload) == ("pending", {"order": answer["order"]})
    assert [j.id for j in jobs_of(dsn)] == [answer["job"]]  # committed: seen from elsewhere


def test_a_rolled_back_view_leaves_neither_the_order_nor_the_job(dsn: str) -> None:
    from django.test import Client
    from shop.models import Order

    before = {j.id for j in jobs_of(dsn)}
    with pytest.raises(ValueError, match="cannot deliver"):
        Client().post("/orders", {"email": "bob@example.invalid"})
    assert not Order.objects.filter(email="bob@example.invalid").exists()
    assert {j.id for j in jobs_of(dsn)} == before


def test_the_helpers_run_in_djangos_transaction_and_leave_its_json_loader(dsn: str) -> None:
    import brooq.contrib.django as brooq_django
    from django.db import connection, transaction

    with transaction.atomic():
        jobs = brooq_django.enqueue_many("email", [{"n": 1}, {"n": 2}])
        assert {j.id for j in jobs} & {f.id for f in jobs_of(dsn)} == set()  # not committed yet
        transaction.set_rollback(True)
    assert all(brooq_django.get_job(j.id) is None for j in jobs)
    job = brooq_django.enqueue("email", {"n": 3})  # Django's autocommit: committed at once
    assert brooq_django.cancel(job.id) is True
    fate = brooq_django.get_job(job.id)
    assert fate is not None and (fate.state, fate.payload) == ("canceled", {"n": 3})
    raw = brooq_django.connection()
    assert raw is connection.connection
    jsonb = raw.adapters.types["jsonb"].oid
    loader = raw.adapters.get_loader(jsonb, psycopg.pq.Format.TEXT)
    assert loader is not None and loader.__name__ == "TextLoader"  # Django's, kept


def test_a_database_that_is_not_postgresql_on_psycopg3_is_refused(
        app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    import brooq.contrib.django as brooq_django
    from django.core.exceptions import ImproperlyConfigured
    from django.db import connections

    with pytest.raises(ImproperlyConfigured, match=r"database 'legacy' is sqlite \(django.db."
                                                   r"backends.sqlite3\); brooq needs PostgreSQL"):
        brooq_django.enqueue("email", {}, using="legacy")
    monkeypatch.setattr(connections["default"], "Database", type(sys)("psycopg2"))
    with pytest.raises(ImproperlyConfigured, match="runs on psycopg2; brooq needs psycopg 3"):
        brooq_django.enqueue("email", {})


def test_the_brooq_settings_are_checked_at_once(monkeypatch: pytest.MonkeyPatch,
                                                app_env: dict[str, str]) -> None:
    import brooq.contrib.django as brooq_django
    from django.conf import settings

    monkeypatch.setattr(settings, "BROOQ", {"CONCURENCY": 4, "LEASE": "30", "DSN": "x"})
    with pytest.raises(brooq.ConfigError) as caught:
        brooq_django.brooq_settings()
    problems = " | ".join(caught.value.problems)
    assert "settings.BROOQ['CONCURENCY']: unknown key; one of DATABASE, HANDLERS, CONCURRENCY" in problems
    assert "settings.BROOQ['LEASE']: duration '30' needs a unit" in problems
    assert "settings.BROOQ['DSN']: unknown key; the worker's connection comes from DATABASES" in problems


def test_the_worker_command_drains_a_job_and_shows_no_password(dsn: str, app_env: dict[str, str]) -> None:
    from django.test import Client

    order = Client().post("/orders", {"email": "cy@example.com"}).json()
    worker = manage({**app_env, "APP_BROOQ_POLL": "100ms"}, "brooq_worker", "--progress", "off",
                    "--concurrency", "2")
    try:
        deadline = time.monotonic() + 20
        while (fate := brooq.contrib.django.get_job(order["job"])) is None or fate.state != "done":
            assert worker.poll() is None, worker.communicate()
            assert time.monotonic() < deadline, "the job was not done in 20 s"
            time.sleep(0.05)
        assert fate.result == {"to": "cy@example.com"}
        from shop.models import Order

        assert Order.objects.get(id=order["order"]).mailed
        cmdline = Path(f"/proc/{worker.pid}/cmdline").read_bytes()
        assert PASSWORD.encode() not in cmdline
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert "topics digest, email, concurrency 2" in err  # the command line's --concurrency won over BROOQ's 4
    assert PASSWORD not in out + err


def test_the_worker_command_names_an_unreachable_database_without_its_password(
        app_env: dict[str, str]) -> None:
    done = manage({**app_env, "APP_DB_PORT": "1"}, "brooq_worker", "--start-timeout", "0s")
    out, err = done.communicate(timeout=30)
    assert done.returncode == 1, err
    assert "brooq: error:" in err and "127.0.0.1" in err and "port 1" in err
    assert err.count("check the DSN") == 1, err  # the hint once, naming where the DSN comes from
    assert "check the DSN (settings.DATABASES['default']" in err and "BROOQ_DSN" not in err, err
    assert PASSWORD not in out + err


def test_the_deploy_command_deploys_brooq_into_djangos_database(server: Server,
                                                                 app_env: dict[str, str]) -> None:
    name = f"brooq_django_empty_{uuid.uuid4().hex[:8]}"
    server.create_db(name)
    try:
        done = manage({**app_env, "APP_DB_NAME": name}, "brooq_deploy", "--method", "psql")
        out, err = done.communicate(timeout=120)
        assert (done.returncode, out) == (0, "deployed sql/install.sql with psql\n"), err
        with psycopg.connect(server.dsn_for(name), autocommit=True) as conn:
            version = brooq.schema_version(conn)
        assert version and PASSWORD not in out + err
    finally:
        server.drop_db(name)


def test_the_declare_command_declares_the_handlers_topics_before_any_worker(
        server: Server, template_db: str, app_env: dict[str, str]) -> None:
    """Right after migrate, no topic exists: a view's enqueue failed (UnknownTopic) until a
    worker with brooq_admin started. `manage.py brooq_declare` declares the handlers' and
    tasks' topics, and the schedules declared in code, at deploy time; a second run
    changes nothing."""
    name = f"brooq_django_declare_{uuid.uuid4().hex[:8]}"
    db = server.create_db(name, template=template_db)  # brooq deployed, no topic yet
    try:
        with psycopg.connect(db, autocommit=True) as conn, pytest.raises(brooq.UnknownTopic):
            brooq.enqueue(conn, "email", {"order": 1})
        env = {**app_env, "APP_DB_NAME": name}
        created = ["+ topic digest: max_attempts=3", "+ topic email: the default settings",
                   '+ schedule digest.daily: cron=0 7 * * * topic=digest payload={"period":"day",'
                   '"to":["team@example.com"]}']
        dry = manage(env, "brooq_declare", "--dry-run")
        out, err = dry.communicate(timeout=60)
        assert (dry.returncode, out.splitlines()) == (
            0, [*created, "dry run, nothing written: 3 to create, 0 to change, 0 to delete"]), err
        done = manage(env, "brooq_declare")
        out, err = done.communicate(timeout=60)
        assert (done.returncode, out.splitlines()) == (
            0, [*created, "declared: 3 created, 0 changed, 0 deleted"]), err
        with psycopg.connect(db, autocommit=True) as conn:
            row = conn.execute("select max_attempts from brooq.topics where name = 'email'").fetchone()
            assert row == (5,)  # the handler's setting (shop/jobs.py), the default too
            assert brooq.enqueue(conn, "email", {"order": 1}).created
            assert conn.execute("select cron, topic from brooq.schedules").fetchall() == [("0 7 * * *", "digest")]
            brooq.declare_topic(conn, "legacy")
        again = manage(env, "brooq_declare")
        out, err = again.communicate(timeout=60)
        assert (again.returncode, out.splitlines()) == (
            0, ["? topic legacy: not in the code; --prune deletes it",
                "nothing changes: the database holds the topics and schedules the code declares"]), err
        pruned = manage(env, "brooq_declare", "--prune")
        out, err = pruned.communicate(timeout=60)
        assert (pruned.returncode, out.splitlines()) == (
            0, ["- topic legacy", "declared: 0 created, 0 changed, 1 deleted"]), err
        assert PASSWORD not in out + err
    finally:
        server.drop_db(name)


def test_a_task_enqueues_on_djangos_connection_checked_and_the_worker_registers_it(dsn: str) -> None:
    import brooq.contrib.django as brooq_django
    from django.db import transaction
    from shop.jobs import Digest, send_digest

    assert isinstance(send_digest, brooq.Task) and send_digest.payload_type is Digest
    assert [t.topic for t in brooq_django.registry().tasks] == ["digest", "email"]
    brooq_django.declare_topic("digest", max_attempts=3)
    with pytest.raises(brooq.PayloadMismatch, match=r"payload does not fit Digest: to\[0\]: expected a string"):
        send_digest.enqueue(brooq_django.connection(), Digest("week", [7]))  # type: ignore[list-item]
    with transaction.atomic():
        job = send_digest.enqueue(brooq_django.connection(), Digest("week", ["a@example.com"]))
    assert jobs_of(dsn, "digest")[0].id == job.id
    assert sorted(brooq_django.worker().topics) == ["digest", "email"]


# --- the admin (brooq.contrib.django.admin) ---------------------------------------------

def admin_user(name: str, *perms: str) -> Any:
    """A staff user holding the permissions ``perms`` of brooq's Job ("view_job", ...)."""
    from django.contrib.auth.models import Permission, User

    user = User.objects.create_user(f"{name}-{uuid.uuid4().hex[:6]}", password="x", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="brooq", codename__in=perms))
    return user


def client_of(user: Any) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def test_the_admin_lists_filters_and_searches_the_jobs_read_only(dsn: str) -> None:
    import brooq.contrib.django as brooq_django

    key = f"adm-{uuid.uuid4().hex[:8]}"
    job = brooq_django.enqueue("email", {"note": "<script>alert(1)</script>"}, key=key)
    viewer = client_of(admin_user("viewer", "view_job"))
    page = viewer.get("/admin/brooq/job/").content.decode()
    assert f"/admin/brooq/job/{job.id}/change/" in page
    assert 'name="action"' not in page or "cancel_jobs" not in page  # no action without its permission
    filtered = viewer.get("/admin/brooq/job/", {"topic": "email", "state__exact": "pending"}).content.decode()
    assert f"/admin/brooq/job/{job.id}/change/" in filtered
    assert f"/admin/brooq/job/{job.id}/change/" not in \
        viewer.get("/admin/brooq/job/", {"state__exact": "dead"}).content.decode()
    for term in (str(job.id), key):
        found = viewer.get("/admin/brooq/job/", {"q": term}).content.decode()
        assert f"/admin/brooq/job/{job.id}/change/" in found, term
    assert f"/admin/brooq/job/{job.id}/change/" not in \
        viewer.get("/admin/brooq/job/", {"q": "no-such-key"}).content.decode()
    # a job's page: read-only, the payload escaped
    detail = viewer.get(f"/admin/brooq/job/{job.id}/change/")
    assert detail.status_code == 200
    text = detail.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script>alert(1)" not in text
    assert 'name="_save"' not in text  # nothing to save
    assert viewer.get("/admin/brooq/job/add/").status_code == 403
    assert viewer.post(f"/admin/brooq/job/{job.id}/delete/", {"post": "yes"}).status_code == 403
    # a staff user without the view permission sees nothing
    assert client_of(admin_user("nobody")).get("/admin/brooq/job/").status_code == 403


def test_the_admin_actions_go_through_brooq_and_need_their_permission(dsn: str) -> None:
    """docs/security.md: a user without brooq.cancel_job (or retry_job) cannot act, even by
    posting the action by hand; with it, the action calls brooq.cancel (brooq.retry) and
    Django writes no brooq table."""
    import brooq.contrib.django as brooq_django
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    job = brooq_django.enqueue("email", {"n": "admin"})
    form = {"action": "cancel_jobs", "_selected_action": [str(job.id)], "index": "0"}
    viewer = client_of(admin_user("viewer", "view_job"))
    assert viewer.post("/admin/brooq/job/", form).status_code in (200, 302)
    retrier = client_of(admin_user("retrier", "view_job", "retry_job"))
    assert retrier.post("/admin/brooq/job/", form).status_code in (200, 302)
    fate = brooq_django.get_job(job.id)
    assert fate is not None and fate.state == "pending"  # neither may cancel
    operator = client_of(admin_user("operator", "view_job", "cancel_job", "retry_job"))
    with CaptureQueriesContext(connection) as queries:
        answer = operator.post("/admin/brooq/job/", form, follow=True)
    assert answer.status_code == 200 and "1 of 1 jobs canceled" in answer.content.decode()
    fate = brooq_django.get_job(job.id)
    assert fate is not None and fate.state == "canceled"
    writes = [q["sql"] for q in queries.captured_queries
              if "brooq" in q["sql"].lower() and q["sql"].lower().lstrip().startswith(("update", "insert", "delete"))]
    assert writes == []  # Django's statements only read the view; brooq.cancel changed the job
    answer = operator.post("/admin/brooq/job/", {**form, "action": "retry_jobs"}, follow=True)
    assert "1 of 1 jobs re-driven" in answer.content.decode()
    fate = brooq_django.get_job(job.id)
    assert fate is not None and fate.state == "pending" and "re-driven from canceled" in (fate.last_error or "")
