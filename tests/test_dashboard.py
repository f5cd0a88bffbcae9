"""`brooq dashboard`, run as a real process against a real database: its pages and its
actions over HTTP, its token and CSRF rules, a read-only database role, and a real
browser (headless Chromium driven by selenium) that follows a dead job to its page,
logs in and re-drives it.

The browser test takes the screenshots docs/dashboard.md shows: into a temporary
directory, or into docs/img/ with BROOQ_WRITE_SCREENSHOTS=1.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from brooq.tools import dashboard_html as html
from conftest import ROOT, Server

TOKEN = "test-token-0123456789abcdef"


@dataclass
class Dashboard:
    proc: subprocess.Popen[str]
    url: str

    @property
    def host(self) -> str:
        return urllib.parse.urlsplit(self.url).netloc

    def request(self, method: str, path: str, body: dict[str, str] | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection(self.host, timeout=10)
        data = urllib.parse.urlencode(body) if body is not None else None
        hdrs = {"content-type": "application/x-www-form-urlencoded"} if body is not None else {}
        hdrs.update(headers or {})
        conn.request(method, path, body=data, headers=hdrs)
        response = conn.getresponse()
        text = response.read().decode()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text

    def get(self, path: str, **headers: str) -> tuple[int, str]:
        status, _, text = self.request("GET", path, headers=headers)
        return status, text


def start_dashboard(dsn: str, *args: str, address: str = "127.0.0.1:0",
                    env: dict[str, str] | None = None) -> Dashboard:
    """The dashboard on a free port of ``address``; its url is on 127.0.0.1 all the same."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("BROOQ_DASHBOARD_TOKEN", "BROOQ_DASHBOARD_ALLOWED_HOSTS")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "brooq.tools", "dashboard", "--dsn", dsn, "--address", address, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**environ, **(env or {})})
    assert proc.stderr is not None
    line = proc.stderr.readline()
    m = re.search(r"on http://(127\.0\.0\.1|0\.0\.0\.0):(\d+)/", line)
    if m is None:
        proc.kill()
        raise AssertionError(f"the dashboard did not start: {line}{proc.stderr.read()}")
    return Dashboard(proc, f"http://127.0.0.1:{m.group(2)}")


@pytest.fixture
def jobs(db: str) -> dict[str, Any]:
    """Topics and jobs in every state the pages show: ready, in flight, failed, dead, done."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('email', max_attempts => 3)")
        conn.execute("select brooq.declare_topic('invoice', max_attempts => 1)")
        conn.execute("select brooq.pause_topic('email')")
        conn.execute("select brooq.resume_topic('email')")
        ids = [r[0] for r in conn.execute(
            "select id from brooq.enqueue_many('invoice', array(select jsonb_build_object('invoice', i)"
            " from generate_series(1, 6) as i))")]
        conn.execute("select brooq.enqueue_many('email', array(select jsonb_build_object('to', i)"
                     " from generate_series(1, 4) as i))")

        def claim(topic: str, n: int) -> list[tuple[int, int]]:
            return [(r[0], r[1]) for r in conn.execute(
                "select id, lease_token from brooq.claim('w-1', array[%s], %s, '5m')", [topic, n])]

        def settle(job: tuple[int, int], outcome: str, error: str | None = None,
                   result: str | None = None) -> None:
            conn.execute("select brooq.settle(%s, 'w-1', %s, %s, %s, null, %s::jsonb)",
                         [job[0], job[1], outcome, error, result])

        claimed = claim("invoice", 6)
        settle(claimed[0], "failed", "ValueError: <script>alert(1)</script> no such invoice")
        settle(claimed[1], "failed", "TimeoutError: the printer did not answer")
        settle(claimed[2], "done", result='{"pages": 3}')
        settle(claimed[3], "done", result='{"pages": 1}')
        # claimed[4] and claimed[5] stay in flight
        email = claim("email", 1)
        settle(email[0], "failed", "SMTP 451: try again later")
        # a topic with a history for the chart: jobs finished over the last 15 minutes
        conn.execute("select brooq.declare_topic('report', max_attempts => 2)")
        conn.execute("select brooq.enqueue_many('report', array(select jsonb_build_object('n', i)"
                     " from generate_series(1, 400) as i))")
        done = claim("report", 400)
        conn.execute("select brooq.settle_many('w-1', %s, %s, array_fill('done'::text, array[%s]),"
                     " array_fill(null::text, array[%s]), array_fill(null::interval, array[%s]),"
                     " array_fill(null::jsonb, array[%s]))",
                     [[d[0] for d in done], [d[1] for d in done]] + [len(done)] * 4)
        # as if settled minute after minute (a superuser's shortcut: the table is private)
        conn.execute("""
            update brooq.job j
               set updated_at = now() - make_interval(mins => r.m, secs => r.s),
                   state = case when j.id % 41 = 0 then 'dead' else j.state end,
                   last_error = case when j.id % 41 = 0
                                     then 'KeyError: ''logo'' (template report-' || j.id || ')' end
              from (select id, abs(hashint4(id::int)) % 14 as m, abs(hashint4(-id::int)) % 20 as s
                      from brooq.job where topic = 'report') as r
             where j.id = r.id and abs(hashint4(j.id::int + 7)) % 15 >= r.m / 2""")
    return {"dead": claimed[0][0], "dead2": claimed[1][0], "done": claimed[2][0],
            "in_flight": claimed[4][0], "failed": email[0][0], "ids": ids}


@pytest.fixture
def dashboard(db: str, jobs: dict[str, Any]) -> Iterator[Dashboard]:
    d = start_dashboard(db, "--token", TOKEN)
    try:
        yield d
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)


def state_of(dsn: str, job_id: int) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select state from brooq.jobs where id = %s", [job_id]).fetchone()
    assert row is not None
    return str(row[0])


def csrf_and_cookie(d: Dashboard) -> tuple[str, str]:
    """Log in over HTTP: the session cookie and the CSRF field of its forms."""
    status, headers, _ = d.request("POST", "/login", {"token": TOKEN, "next": "/"})
    assert status == 303
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert TOKEN not in cookie  # the browser holds a session, not the token
    session = cookie.split(";")[0]
    page = d.get("/jobs", cookie=session)[1]
    m = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert m is not None
    return m.group(1), session


def row_of(page: str, row_id: str) -> str:
    m = re.search(f'<tr id="{row_id}">(.*?)</tr>', page)
    assert m is not None, f"no row {row_id}"
    return m.group(1)


def bars(row: str) -> tuple[int, int]:
    """The jobs done and dead over the bars of a topic's chart."""
    counts = re.findall(r"<title>[^<]*: (\d+) done, (\d+) dead</title>", row)
    assert len(counts) == 15
    return sum(int(d) for d, _ in counts), sum(int(x) for _, x in counts)


def test_pages_render_from_the_views(dashboard: Dashboard, db: str, jobs: dict[str, Any]) -> None:
    status, text = dashboard.get("/")
    assert status == 200
    assert 'id="topic-invoice"' in text and 'id="topic-email"' in text
    assert bars(row_of(text, "topic-invoice")) == (2, 2)  # done, dead over the 15 bars
    # a complete minute is read once, then kept by the dashboard (docs/dashboard.md): a
    # job moved 10 minutes back is no longer counted where it was, nor where it went
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("update brooq.job set updated_at = updated_at - interval '10 minutes' "
                     "where id = %s", [jobs["done"]])
    assert bars(row_of(dashboard.get("/")[1], "topic-invoice")) == (1, 2)
    status, text = dashboard.get("/in-flight")
    assert status == 200 and f'href="/jobs/{jobs["in_flight"]}"' in text and "w-1" in text
    status, text = dashboard.get("/jobs")
    assert status == 200
    assert f'id="job-{jobs["dead"]}"' in text and f'id="job-{jobs["failed"]}"' in text
    assert f'id="job-{jobs["done"]}"' not in text
    # the error is shown, escaped: no markup from the database reaches the page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script>" not in text
    text = dashboard.get("/jobs?topic=email")[1]
    assert f'id="job-{jobs["failed"]}"' in text and f'id="job-{jobs["dead"]}"' not in text
    text = dashboard.get("/jobs?state=dead&topic=invoice")[1]
    assert f'id="job-{jobs["dead"]}"' in text and f'id="job-{jobs["failed"]}"' not in text
    status, text = dashboard.get(f"/jobs/{jobs['done']}")
    assert status == 200 and "&quot;pages&quot;: 3" in text and "s-done" in text
    assert dashboard.get("/jobs/999999999")[0] == 404
    assert dashboard.get("/jobs?state=bogus")[0] == 400
    status, headers, _ = dashboard.request("GET", "/")
    assert "script-src" not in headers["content-security-policy"]  # no script at all
    assert headers["x-content-type-options"] == "nosniff"
    assert dashboard.get("/healthz") == (200, "ok\n")


def test_the_failure_lists_read_the_failures_not_the_history(db: str) -> None:
    """The dead and failed list, of every topic or of one, reads one range of
    job_failures_idx per topic and state: 20,000 done jobs newer than the failures are never read
    (the list once walked job_pkey back until it had 200 rows; docs/dashboard.md)."""
    from brooq.tools import dashboard_browse as listing
    from brooq.tools.dashboard import Database
    from brooq.tools.dashboard_browse import Filters
    from psycopg.rows import class_row
    with psycopg.connect(db, autocommit=True) as conn:
        for t in ("a", "b", "c"):
            conn.execute("select brooq.declare_topic(%s)", [t])
        conn.execute("insert into brooq.job (topic, payload, state, attempts, max_attempts, last_error,"
                     " available_at, created_at, updated_at)"
                     " select (array['a', 'b'])[1 + g % 2], '{}', (array['dead', 'failed'])[1 + g / 3 % 2],"
                     " 1, 5, 'boom ' || g, now(), now(), now() from generate_series(1, 12) g")
        conn.execute("insert into brooq.job (topic, payload, state, attempts, max_attempts,"
                     " available_at, created_at, updated_at)"
                     " select (array['a', 'b', 'c'])[1 + g % 3], '{}', 'done', 1, 5, now(), now(), now()"
                     " from generate_series(1, 20000) g")
        conn.execute("vacuum analyze brooq.job")
        failures = conn.execute("select id, topic, state from brooq.job"
                                " where state in ('dead', 'failed') order by id desc").fetchall()
        names = Database.topic_names(conn)
        assert names == ["a", "b", "c"]
        for topics, states in ((names, ["dead", "failed"]), (["a"], ["dead"]), (["c"], ["dead", "failed"])):
            with conn.transaction():
                read = "select pg_stat_get_xact_tuples_returned('brooq.job'::regclass)" \
                       " + pg_stat_get_xact_tuples_fetched('brooq.job'::regclass)"
                before = conn.execute(read).fetchone()[0]  # type: ignore[index]
                plan = listing.plan(Filters(state=states[0] if len(states) == 1 else ""), topics, None, 5)
                rows = conn.cursor(row_factory=class_row(listing.Scanned)).execute(
                    plan.order.query, plan.params).fetchall()
                tuples = conn.execute(read).fetchone()[0] - before  # type: ignore[index]
            assert listing.merge(plan, rows).ids == \
                [f[0] for f in failures if f[1] in topics and f[2] in states][:5]
            assert tuples <= 12, f"the list of {topics} {states} read {tuples} rows of brooq.job"


def test_actions_need_the_token_and_a_form_of_this_dashboard(
        dashboard: Dashboard, db: str, jobs: dict[str, Any]) -> None:
    dead = jobs["dead"]
    # read-only without the token: no forms on the pages, every action refused
    assert "re-drive" not in dashboard.get("/jobs")[1]
    assert dashboard.request("POST", f"/jobs/{jobs['failed']}/cancel", {})[0] == 403
    assert dashboard.request("POST", "/topics/email/pause", {})[0] == 403
    assert dashboard.request("POST", f"/jobs/{jobs['failed']}/cancel", {},
                             {"authorization": "Bearer not-the-token-at-all"})[0] == 403
    status, _, text = dashboard.request("POST", "/login", {"token": "wrong-token-xxxxxxxx"})
    assert status == 403 and "not the dashboard" in text
    assert state_of(db, jobs["failed"]) == "failed"
    csrf, session = csrf_and_cookie(dashboard)
    # a logged-in browser: the CSRF field is required, and so is this dashboard's origin
    assert dashboard.request("POST", f"/jobs/{jobs['failed']}/cancel", {"csrf": "0" * 64},
                             {"cookie": session})[0] == 403
    assert dashboard.request("POST", f"/jobs/{jobs['failed']}/cancel", {"csrf": csrf},
                             {"cookie": session, "origin": "http://evil.example"})[0] == 403
    assert state_of(db, jobs["failed"]) == "failed"
    status, headers, _ = dashboard.request(
        "POST", f"/jobs/{jobs['failed']}/cancel", {"csrf": csrf, "next": "/jobs?topic=email"},
        {"cookie": session, "origin": dashboard.url})
    assert status == 303 and headers["location"] == "/jobs?topic=email&did=canceled"
    assert state_of(db, jobs["failed"]) == "canceled"
    # never redirected off the dashboard
    status, headers, _ = dashboard.request(
        "POST", "/topics/email/pause", {"csrf": csrf, "next": "//evil.example/"}, {"cookie": session})
    assert status == 303 and headers["location"] == "/?did=paused"
    assert "s-paused" in dashboard.get("/")[1]
    # a script: the bearer token, no cookie, no CSRF field
    status, headers, _ = dashboard.request("POST", "/topics/email/resume", {},
                                           {"authorization": f"Bearer {TOKEN}"})
    assert status == 303 and headers["location"] == "/?did=resumed"
    status, headers, _ = dashboard.request("POST", "/topics/email/resume", {},
                                           {"authorization": f"Bearer {TOKEN}"})
    assert headers["location"] == "/?did=not-resumed"
    status, headers, _ = dashboard.request("POST", f"/jobs/{dead}/retry", {},
                                           {"authorization": f"Bearer {TOKEN}"})
    assert status == 303 and headers["location"] == f"/jobs/{dead}?did=retried"
    assert state_of(db, dead) == "pending"
    status, headers, _ = dashboard.request("POST", f"/jobs/{dead}/retry", {},
                                           {"authorization": f"Bearer {TOKEN}"})
    assert headers["location"] == f"/jobs/{dead}?did=not-retried"  # pending: nothing to re-drive
    # logging out ends the session in this browser
    status, headers, _ = dashboard.request("POST", "/logout", {}, {"cookie": session})
    assert status == 303 and "brooq_session=" in headers["set-cookie"]


def test_an_unknown_topic_is_404_and_sigterm_stops_with_0(db: str, jobs: dict[str, Any]) -> None:
    d = start_dashboard(db, "--token", TOKEN)
    try:
        bearer = {"authorization": f"Bearer {TOKEN}"}
        for path in ("/topics/nope/pause", "/topics/nope/resume"):
            status, _, text = d.request("POST", path, {}, headers=bearer)
            assert status == 404, (path, status, text)  # was 503, "The database answered with an error"
            assert "Topic nope not found" in text and "No topic has this name" in text
        status, text = d.get("/jobs?topic=nope")
        assert status == 404 and "Topic nope not found" in text
        assert d.get("/jobs?topic=email")[0] == 200
    finally:
        d.proc.terminate()  # SIGTERM
        code = d.proc.wait(timeout=10)
    assert code == 0, d.proc.stderr.read() if d.proc.stderr else code  # was 143 (-15)


def test_the_search_box_finds_a_job_by_id_or_key_and_pages_refresh_themselves(
        dashboard: Dashboard, db: str, jobs: dict[str, Any]) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        both = [conn.execute("select id from brooq.enqueue(%s, '{}', idempotency_key => 'order-42')",
                             [topic]).fetchone()[0] for topic in ("email", "invoice")]
        alone = conn.execute("select id from brooq.enqueue('email', '{}', idempotency_key => 'only-7')"
                             ).fetchone()[0]
    for text, where in ((str(jobs["dead"]), f"/jobs/{jobs['dead']}"), ("only-7", f"/jobs/{alone}"),
                        ("", "/jobs")):
        status, headers, _ = dashboard.request("GET", f"/find?q={text}")
        assert (status, headers["location"]) == (303, where), text
    status, text = dashboard.get("/find?q=order-42")  # one key, two topics: both listed
    assert status == 200 and f'id="job-{both[0]}"' in text and f'id="job-{both[1]}"' in text
    status, text = dashboard.get("/find?q=" + urllib.parse.quote("<script>x</script>"))
    assert status == 404 and "Nothing found for &lt;script&gt;x&lt;/script&gt;" in text
    assert "<script>x" not in text  # the text searched is shown escaped (title, box)
    assert dashboard.get("/find?q=" + "k" * 201)[0] == 400
    # the read pages reload themselves every few seconds, a flash shown once
    page = dashboard.get("/in-flight?did=login")[1]
    assert '<meta http-equiv="refresh" content="5; url=/in-flight">' in page
    assert "http-equiv" not in dashboard.get("/jobs?topic=invoice")[1]  # filters to type: held still
    assert '<meta http-equiv="refresh" content="5; url=/">' in dashboard.get("/")[1]
    assert "http-equiv" not in dashboard.get("/login")[1]  # a form does not reload under the typing
    assert "http-equiv" not in dashboard.get(f"/jobs/{jobs['done']}")[1]  # finished: held still


def test_a_search_python_reads_as_digits_but_not_as_a_number_is_a_key_not_a_500(
        dashboard: Dashboard, db: str, jobs: dict[str, Any]) -> None:
    """Superscript two ("\u00b2") passes str.isdigit, and int() refuses it (it was a
    500): it is searched as a key, like any text that is not an id of ASCII digits."""
    with psycopg.connect(db, autocommit=True) as conn:
        cubed = conn.execute("select id from brooq.enqueue('email', '{}', idempotency_key => '\u00b3')"
                             ).fetchone()[0]
    for text in ("\u00b2", "\uff11", "\u0661" * 25, "1\u00b2"):
        status, headers, page = dashboard.request("GET", "/find?q=" + urllib.parse.quote(text))
        assert status == 404 and "Nothing found for" in page, (text, status, page[:200])
        assert "script-src" not in headers["content-security-policy"], text
    status, headers, _ = dashboard.request("GET", "/find?q=" + urllib.parse.quote("\u00b3"))
    assert (status, headers["location"]) == (303, f"/jobs/{cubed}")


def test_every_response_carries_the_security_headers(dashboard: Dashboard, jobs: dict[str, Any]) -> None:
    """Pages, redirects, the 404 and 405 of an unknown path or method, the 421 of another
    host, /healthz: each with the policy (no script, never framed) and no caching."""
    answers = [
        dashboard.request("GET", "/"),
        dashboard.request("GET", "/find?q="),  # a redirect
        dashboard.request("GET", f"/find?q={jobs['dead']}"),
        dashboard.request("GET", "/no/such/page"),
        dashboard.request("GET", "/jobs/x"),
        dashboard.request("DELETE", "/jobs"),
        dashboard.request("POST", "/jobs/1/cancel"),  # refused: no session
        dashboard.request("GET", "/", headers={"host": "evil.example"}),
        dashboard.request("GET", "/healthz"),
    ]
    assert [a[0] for a in answers] == [200, 303, 303, 404, 404, 405, 403, 421, 200]
    for status, headers, _ in answers:
        assert headers.get("content-security-policy", "").startswith("default-src 'none'"), (status, headers)
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert (headers["x-content-type-options"], headers["cache-control"]) == ("nosniff", "no-store"), status
        assert headers["referrer-policy"] == "same-origin", status


def test_an_unexpected_error_is_a_500_with_the_security_headers_and_no_trace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """In process (a failure the running dashboard cannot be made to have): the 500
    page of an exception no handler expected says nothing of it, with every header."""
    from brooq.tools import dashboard
    from starlette.testclient import TestClient

    def broken(self: Any, job_id: int) -> None:
        raise RuntimeError("secret detail of a bug")

    monkeypatch.setattr(dashboard.Database, "job", broken)
    app = dashboard.create_app("host=nowhere", None, dashboard.Hosts.of("127.0.0.1", 8080))
    with TestClient(app, base_url="http://127.0.0.1:8080", raise_server_exceptions=False) as client:
        response = client.get("/jobs/1")
    assert response.status_code == 500
    assert "secret" not in response.text
    for name, value in dashboard.SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, name


def test_a_waiting_job_s_page_links_its_parents_with_their_states(
        dashboard: Dashboard, db: str, jobs: dict[str, Any]) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        child = conn.execute("select id from brooq.enqueue('email', '{}', after => %s)",
                             [[jobs["done"], jobs["failed"]]]).fetchone()[0]
    status, page = dashboard.get(f"/jobs/{child}")
    assert status == 200 and "s-waiting" in page
    for parent, state in ((jobs["done"], "done"), (jobs["failed"], "failed")):
        assert f'<a href="/jobs/{parent}" id="parent-{parent}">{parent}</a> <span class="state s-{state}">' in page
    assert 'id="parent-' not in dashboard.get(f"/jobs/{jobs['done']}")[1]
    # the parent's page links its children, the first MAX_CHILDREN of them, then "..."
    status, page = dashboard.get(f"/jobs/{jobs['failed']}")
    assert status == 200 and f'<a href="/jobs/{child}" id="child-{child}">{child}</a> <span class="state s-waiting">' in page
    assert " ..." not in page.split('id="child-')[-1].split("</dd>")[0]
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.enqueue('email', '{}', after => %s) from generate_series(1, %s)",
                     [[jobs["failed"]], html.MAX_CHILDREN])
    page = dashboard.get(f"/jobs/{jobs['failed']}")[1]
    assert page.count('id="child-') == html.MAX_CHILDREN and " ...</dd>" in page
    assert 'id="child-' not in dashboard.get(f"/jobs/{child}")[1]


def peak_rss_mib(pid: int) -> float:
    """A process's peak resident memory (VmHWM), in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]


def test_the_page_of_a_child_of_many_parents_with_large_results_reads_only_ids_and_states(
        dashboard: Dashboard, db: str) -> None:
    """A child of 120 parents whose results are 1 MB each: its page (which reloads
    itself every few seconds) shows the first MAX_PARENTS parents' ids and states and
    how many more there are; the dashboard reads no result of them (it read all 120 MB,
    and decoded them, for ids and states)."""
    n = 120
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('fan')")
        ids = [r[0] for r in conn.execute(
            "select id from brooq.enqueue_many('fan', array(select '{}'::jsonb from generate_series(1, %s)))",
            [n])]
        # done with a result of 1 MB each, little compressible (a superuser's shortcut)
        conn.execute("""
            update brooq.job j
               set state = 'done', attempts = 1,
                   result = jsonb_build_object('blob', (select string_agg(md5(j.id || ':' || g), '')
                                                         from generate_series(1, 31250) g))
             where j.id = any(%s)""", [ids])
        child = conn.execute("select id from brooq.enqueue('fan', '{}', after => %s)", [ids]).fetchone()[0]
        assert conn.execute("select sum(length(result::text)) from brooq.jobs where id = any(%s)",
                            [ids]).fetchone()[0] > n * 10**6
    dashboard.get("/")  # the dashboard's own start-up memory, before the page
    before = peak_rss_mib(dashboard.proc.pid)
    started = time.monotonic()
    status, page = dashboard.get(f"/jobs/{child}")
    took = time.monotonic() - started
    grew = peak_rss_mib(dashboard.proc.pid) - before
    print(f"\nthe page of a child of {n} parents of 1 MB: {took:.2f} s, peak memory +{grew:.1f} MiB")
    assert status == 200
    assert grew < 30, f"the dashboard's peak memory grew by {grew:.0f} MiB for one page"
    assert page.count('id="parent-') == html.MAX_PARENTS
    for parent in ids[:html.MAX_PARENTS]:
        assert f'<a href="/jobs/{parent}" id="parent-{parent}">{parent}</a> <span class="state s-done">' in page
    assert f'id="parent-{ids[html.MAX_PARENTS]}"' not in page
    assert f"... ({n - html.MAX_PARENTS} more parents)" in page
    assert "blob" not in page


def test_re_driving_every_dead_job_of_a_topic_needs_the_token_and_this_dashboard(
        dashboard: Dashboard, db: str, jobs: dict[str, Any]) -> None:
    dead = [jobs["dead"], jobs["dead2"]]
    path = "/topics/invoice/retry-dead"
    # a foreign page: no session, or the session its browser holds without this dashboard's
    # CSRF field and origin; a link or an image (GET) is not an action
    assert dashboard.request("POST", path, {})[0] == 403
    csrf, session = csrf_and_cookie(dashboard)
    assert dashboard.request("POST", path, {}, {"cookie": session})[0] == 403
    assert dashboard.request("POST", path, {"csrf": csrf},
                             {"cookie": session, "origin": "http://evil.example"})[0] == 403
    assert dashboard.request("GET", path)[0] == 405
    assert [state_of(db, i) for i in dead] == ["dead", "dead"]
    assert 're-drive every dead job of invoice' in dashboard.get("/jobs?topic=invoice", cookie=session)[1]
    status, headers, _ = dashboard.request("POST", path, {"csrf": csrf},
                                           {"cookie": session, "origin": dashboard.url})
    assert (status, headers["location"]) == (303, "/jobs?topic=invoice&state=dead&did=retried-dead")
    assert [state_of(db, i) for i in dead] == ["pending", "pending"]
    with psycopg.connect(db, autocommit=True) as conn:  # another topic's dead jobs are left
        assert conn.execute("select count(*) from brooq.jobs where topic = 'report' and state = 'dead'"
                            ).fetchone()[0] > 0
    status, headers, _ = dashboard.request("POST", path, {}, {"authorization": f"Bearer {TOKEN}"})
    assert headers["location"].endswith("did=not-retried-dead")
    assert dashboard.request("POST", "/topics/nope/retry-dead", {},
                             {"authorization": f"Bearer {TOKEN}"})[0] == 404


def test_a_dashboard_without_a_token_is_read_only(db: str, jobs: dict[str, Any]) -> None:
    d = start_dashboard(db)
    try:
        assert "read-only" in d.get("/")[1] and "/login" not in d.get("/")[1]
        status, _, text = d.request("POST", f"/jobs/{jobs['dead']}/retry", {},
                                    {"authorization": f"Bearer {TOKEN}"})
        assert status == 403 and "without a token" in text
        assert d.request("POST", "/login", {"token": TOKEN})[0] == 403
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)
    assert state_of(db, jobs["dead"]) == "dead"


def test_the_documented_read_only_role_sees_every_page(
        server: Server, db: str, jobs: dict[str, Any]) -> None:
    """docs/dashboard.md, "Its database role": the grants of a read-only dashboard."""
    dbname = psycopg.conninfo.conninfo_to_dict(db)["dbname"]
    role = f"dash_ro_{dbname[-12:]}"
    doc = (ROOT / "docs" / "dashboard.md").read_text()
    grants = re.search(r"```sql\n(create role brooq_dashboard.*?)```", doc, re.DOTALL)
    assert grants is not None, "docs/dashboard.md lost its grants"
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(grants.group(1).replace("brooq_dashboard", role))  # type: ignore[call-overload]
    try:
        ro_dsn = psycopg.conninfo.make_conninfo(db, user=role)
        d = start_dashboard(ro_dsn, "--token", TOKEN)
        try:
            for path in ("/", "/in-flight", "/jobs", f"/jobs/{jobs['dead']}", "/healthz"):
                assert d.get(path)[0] == 200, path
            assert d.get(f"/find?q={jobs['dead']}")[0] == 303  # found: to its page
            status, _, text = d.request("POST", f"/jobs/{jobs['failed']}/cancel", {},
                                        {"authorization": f"Bearer {TOKEN}"})
            assert status == 403 and "brooq_admin" in text  # the database refuses
            # a role granted before brooq.topics was in the block: the names come
            # from brooq.topic_stats instead
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute(f"revoke select on brooq.topics from {role}")  # type: ignore[call-overload]
            status, text = d.get("/jobs")
            assert status == 200 and f'id="job-{jobs["dead"]}"' in text and 'value="email"' in text
            assert d.get(f"/find?q={jobs['dead']}")[0] == 303
        finally:
            d.proc.terminate()
            d.proc.wait(timeout=10)
        # without those grants: every page is refused, saying what it needs
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(f"revoke select on brooq.topic_stats from {role}")  # type: ignore[call-overload]
        d = start_dashboard(ro_dsn)
        try:
            status, text = d.get("/")
            assert status == 403 and "Its database role" in text
        finally:
            d.proc.terminate()
            d.proc.wait(timeout=10)
    finally:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(f"drop owned by {role}")  # type: ignore[call-overload]
        server.execute(f"drop role {role}")
    assert state_of(db, jobs["failed"]) == "failed"


def test_brooq_dashboard_refuses_a_public_address_and_a_short_token(db: str) -> None:
    for args, message in ((["--address", "0.0.0.0:0"], "not a loopback address"),
                          (["--token", "short"], "16 or more"),
                          (["--allowed-host", "https://dash.example/"], "--allowed-host: "),
                          (["--allowed-host", "dash.example:99999"], "--allowed-host: "),
                          (["--dsn", "postgresql://postgres@127.0.0.1:1/x"], "cannot connect")):
        done = subprocess.run([sys.executable, "-m", "brooq.tools", "dashboard", "--dsn", db, *args],
                              capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode != 0 and message in done.stderr, done.stderr


# --- the Host check (DNS rebinding) ---------------------------------------------------

FOREIGN_HOSTS = ("evil.example:{port}", "evil.example", "127.0.0.1.evil.example:{port}",
                 "127.0.0.1:{other}", "localhost:{other}", "127.0.0.1", "", "[::1", "127.0.0.1:{port}:1")


def test_a_request_for_another_host_is_421_before_any_read(
        dashboard: Dashboard, server: Server, db: str, jobs: dict[str, Any]) -> None:
    """A page whose name an attacker points at 127.0.0.1 (DNS rebinding) reads nothing:
    every path, GET and POST, /login and /healthz too, answers 421 and no data."""
    port = int(dashboard.host.rsplit(":", 1)[1])
    other = port + 1 if port < 65535 else port - 1
    paths = ("/", "/in-flight", "/jobs", "/jobs?state=dead", f"/jobs/{jobs['dead']}", "/login",
             "/healthz", "/favicon.ico", "/no-such-page")
    csrf, session = csrf_and_cookie(dashboard)
    for spelling in FOREIGN_HOSTS:
        host = spelling.format(port=port, other=other)
        for path in paths:
            status, headers, text = dashboard.request("GET", path, headers={"host": host})
            assert (status, text.startswith("421 Misdirected Request")) == (421, True), (host, path)
            assert "no such invoice" not in text and "invoice" not in text
            assert "set-cookie" not in headers
        # POSTs too: the login (the foreign Origin agrees with the foreign Host) and actions
        status, headers, _ = dashboard.request(
            "POST", "/login", {"token": TOKEN, "next": "/"},
            {"host": host, "origin": f"http://{host}"})
        assert status == 421 and "set-cookie" not in headers, host
        assert dashboard.request("POST", f"/jobs/{jobs['dead']}/retry", {},
                                 {"host": host, "authorization": f"Bearer {TOKEN}"})[0] == 421
        assert dashboard.request("POST", "/topics/email/pause", {"csrf": csrf},
                                 {"host": host, "cookie": session})[0] == 421
        assert dashboard.request("POST", "/logout", {}, {"host": host, "cookie": session})[0] == 421
    assert state_of(db, jobs["dead"]) == "dead"
    assert 'class="state s-paused"' not in dashboard.get("/")[1]
    # the names of loopback, in any case, with the dashboard's port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}",
                 f"[0:0::1]:{port}"):
        assert dashboard.get(f"/jobs/{jobs['dead']}", host=host)[0] == 200, host
    # refused before the database is asked: with no connection allowed, a page of this
    # dashboard is 503 (it did ask), a request for another host still 421
    dbname = psycopg.conninfo.conninfo_to_dict(db)["dbname"]
    server.execute(f'alter database "{dbname}" with allow_connections false')
    try:
        assert dashboard.get("/jobs")[0] == 503
        assert dashboard.get("/healthz")[0] == 503
        assert dashboard.get("/jobs", host=f"evil.example:{port}")[0] == 421
        assert dashboard.get("/healthz", host=f"evil.example:{port}")[0] == 421
    finally:
        server.execute(f'alter database "{dbname}" with allow_connections true')


def test_allowed_hosts_are_answered_and_a_post_s_origin_must_be_its_host(
        db: str, jobs: dict[str, Any]) -> None:
    d = start_dashboard(db, "--token", TOKEN, "--allowed-host", "dash.example",
                        "--allowed-host", "Proxy.Example:8443")
    try:
        port = int(d.host.rsplit(":", 1)[1])
        for host in ("dash.example", f"dash.example:{port}", "dash.example:443", "DASH.example",
                     "proxy.example:8443"):
            assert d.get("/jobs", host=host)[0] == 200, host
        for host in ("proxy.example", f"proxy.example:{port}", "sub.dash.example", "dash.example.",
                     "dash.example.evil.example", f"10.1.2.3:{port}"):
            assert d.get("/jobs", host=host)[0] == 421, host
        # a browser's POST: its Origin is the host it was sent to, else refused
        status, headers, _ = d.request("POST", "/login", {"token": TOKEN, "next": "/jobs"},
                                       {"host": "dash.example", "origin": "https://dash.example"})
        assert status == 303 and headers["location"] == "/jobs?did=login"
        for origin in ("http://evil.example", f"http://localhost:{port}", "null",
                       "http://dash.example.evil.example"):
            status, headers, _ = d.request("POST", "/login", {"token": TOKEN},
                                           {"host": "dash.example", "origin": origin})
            assert status == 403 and "set-cookie" not in headers, origin
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)
    # the same names from the environment, comma-separated
    d = start_dashboard(db, env={"BROOQ_DASHBOARD_ALLOWED_HOSTS": "dash.example, proxy.example:8443"})
    try:
        assert d.get("/", host="dash.example")[0] == 200
        assert d.get("/", host="proxy.example:8443")[0] == 200
        assert d.get("/", host="evil.example")[0] == 421
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)


def test_on_every_address_a_host_is_an_ip_address_or_an_allowed_name(
        db: str, jobs: dict[str, Any]) -> None:
    """--public on 0.0.0.0: a browser that opens the dashboard by an IP address (or
    localhost) names no one's DNS; any other name must be given with --allowed-host."""
    d = start_dashboard(db, "--public", "--allowed-host", "dash.example", address="0.0.0.0:0")
    try:
        port = int(d.host.rsplit(":", 1)[1])
        for host in (f"127.0.0.1:{port}", f"10.1.2.3:{port}", f"[fd00::5]:{port}", f"localhost:{port}",
                     "dash.example", "dash.example:8080"):
            assert d.get(f"/jobs/{jobs['dead']}", host=host)[0] == 200, host
        for host in (f"evil.example:{port}", f"10.1.2.3.nip.io:{port}", "10.1.2.3:1", "10.1.2.3",
                     f"0x7f.1:{port}", f"127.1:{port}"):
            assert d.get(f"/jobs/{jobs['dead']}", host=host)[0] == 421, host
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)


# --- where an action goes back to ---------------------------------------------------------

OFF_SITE = ("//evil.example/x", "/\t/a//evil.example/x", "/\n/a//evil.example/x",
            "/\r/a//evil.example/x", "/\t/evil.example/x", "\t//evil.example/x", " //evil.example/x",
            "/\\evil.example/x", "\\/evil.example/x", "/\x00/a//evil.example/x",
            "/\x7f//evil.example", "/\x0b//evil.example", "https://evil.example/x", "evil.example",
            "/jobs?\t//evil.example", "/#\n//evil.example")


def test_next_never_leaves_the_dashboard(dashboard: Dashboard) -> None:
    """POST /login and an action redirect to their `next` only when it is a path of this
    dashboard as a browser reads it: a tab, CR or LF (which URL parsers drop), another
    control character or a backslash anywhere sends them home."""
    csrf, session = csrf_and_cookie(dashboard)
    for target in OFF_SITE:
        status, headers, _ = dashboard.request("POST", "/login", {"token": TOKEN, "next": target})
        assert (status, headers["location"]) == (303, "/?did=login"), repr(target)
        status, headers, _ = dashboard.request("POST", "/topics/email/pause",
                                               {"csrf": csrf, "next": target}, {"cookie": session})
        assert (status, headers["location"]) == (303, "/?did=paused"), repr(target)
        status, headers, _ = dashboard.request("POST", "/topics/email/resume", {"next": target},
                                               {"authorization": f"Bearer {TOKEN}"})
        assert (status, headers["location"]) == (303, "/?did=resumed"), repr(target)


def test_next_keeps_a_path_of_the_dashboard(dashboard: Dashboard, jobs: dict[str, Any]) -> None:
    failed = jobs["failed"]
    for target, location in (("/jobs?topic=email&state=", "/jobs?topic=email&did=login"),
                             (f"/jobs/{failed}?did=old#top", f"/jobs/{failed}?did=login"),
                             ("/jobs/%2F%2Fevil.example", "/jobs/%2F%2Fevil.example?did=login")):
        status, headers, _ = dashboard.request("POST", "/login", {"token": TOKEN, "next": target})
        assert status == 303 and headers["location"] == location, target
    status, headers, _ = dashboard.request("POST", f"/jobs/{failed}/cancel",
                                           {"next": "/jobs?state=failed"},
                                           {"authorization": f"Bearer {TOKEN}"})
    assert status == 303 and headers["location"] == "/jobs?state=failed&did=canceled"


# --- a job Python cannot decode -------------------------------------------------------

def test_a_payload_python_cannot_decode_leaves_the_triage_pages_whole(
        dashboard: Dashboard, db: str, jobs: dict[str, Any]) -> None:
    """jsonb holds what Python's json refuses (nesting past the recursion limit, an
    integer of thousands of digits): the pages show such a job as stored, cut short with
    a note when long, and the jobs beside it."""
    deep = "[" * 1500 + "]" * 1500
    digits = "9" * 5000
    with psycopg.connect(db, autocommit=True) as conn:
        def enqueue(payload: str) -> int:
            row = conn.execute("select id from brooq.enqueue('invoice', %s::jsonb)", [payload]).fetchone()
            assert row is not None
            return int(row[0])

        ids = {"deep": enqueue(deep), "digits": enqueue(f'{{"n": {digits}}}'),
               "long": enqueue(f'{{"n": {digits}, "pad": "{"x" * 70000}"}}')}
        claimed = conn.execute("select id, lease_token from brooq.claim('w-1', array['invoice'], 3, '5m')"
                               ).fetchall()
        assert sorted(r[0] for r in claimed) == sorted(ids.values())
        for job_id, lease_token in claimed[1:]:  # dead (invoice: one attempt); the first stays
            conn.execute("select brooq.settle(%s, 'w-1', %s, 'failed', 'boom')", [job_id, lease_token])
        first = claimed[0]  # in flight, reporting a progress Python cannot decode either
        conn.execute("select brooq.heartbeat('w-1', array[%s::bigint], '5m', array[%s::bigint], "
                     "array[%s::jsonb])", [first[0], first[1], deep])
        conn.execute("update brooq.job set result = %s::jsonb where id = %s", [deep, claimed[1][0]])
    neighbours = [jobs["dead"], jobs["dead2"]]
    for path in ("/jobs", "/jobs?state=dead", "/jobs?topic=invoice"):
        status, text = dashboard.get(path)
        assert status == 200, path
        for job_id in [*neighbours, claimed[1][0], claimed[2][0]]:
            assert f'id="job-{job_id}"' in text, (path, job_id)
    status, text = dashboard.get("/in-flight")
    assert status == 200 and f'href="/jobs/{first[0]}"' in text
    assert f'href="/jobs/{jobs["in_flight"]}"' in text and "[" * 200 in text
    status, text = dashboard.get(f"/jobs/{ids['deep']}")
    assert status == 200 and deep in text
    status, text = dashboard.get(f"/jobs/{ids['digits']}")
    assert status == 200 and f"{{&quot;n&quot;: {digits}}}" in text
    status, text = dashboard.get(f"/jobs/{ids['long']}")
    assert status == 200 and digits in text
    stored = len(f'{{"n": {digits}, "pad": "{"x" * 70000}"}}')
    assert f"... ({stored - 65536} more characters)" in text and "x" * 70000 not in text
    for job_id in (claimed[1][0], first[0]):  # the result, the progress: as stored too
        status, text = dashboard.get(f"/jobs/{job_id}")
        assert status == 200 and "[" * 1000 in text
    assert dashboard.get(f"/jobs/{jobs['done']}")[1].count("&quot;pages&quot;: 3") == 1


# --- the browser ----------------------------------------------------------------------

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def browser() -> Iterator[Any]:
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("chromium and chromium-driver are not installed (.ci/bootstrap installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1360,860", "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()


def at(browser: Any, ending: str) -> None:
    """Wait until the browser's page is the one at a URL ending so (a click navigates later)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(lambda b: b.current_url.endswith(ending),
                                     f"the browser to reach ...{ending}")


@pytest.mark.slow
def test_in_a_browser_follow_a_dead_job_log_in_and_re_drive_it(
        browser: Any, dashboard: Dashboard, db: str, jobs: dict[str, Any], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    shots = ROOT / "docs" / "img" if os.environ.get("BROOQ_WRITE_SCREENSHOTS") else tmp_path
    shots.mkdir(exist_ok=True)
    dead = jobs["dead"]
    browser.get(dashboard.url + "/")
    assert browser.find_element(By.ID, "topic-invoice").is_displayed()
    browser.save_screenshot(str(shots / "dashboard-topics.png"))
    # the topic's dead and failed jobs, then the dead job's page
    browser.find_element(By.LINK_TEXT, "invoice").click()
    at(browser, "/jobs?topic=invoice")
    browser.find_element(By.LINK_TEXT, str(dead)).click()
    at(browser, f"/jobs/{dead}")
    assert "dead" in browser.find_element(By.ID, "facts").text
    assert "no such invoice" in browser.find_element(By.ID, "last-error").text
    assert not browser.find_elements(By.ID, "retry")  # read-only: no action
    # log in: back on the job's page, now with its action
    browser.find_element(By.ID, "login").click()
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    browser.find_element(By.ID, "submit").click()
    at(browser, f"/jobs/{dead}?did=login")
    cookie = browser.get_cookie("brooq_session")
    assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    browser.save_screenshot(str(shots / "dashboard-job.png"))
    browser.find_element(By.LINK_TEXT, "Dead & failed").click()
    at(browser, "/jobs")
    assert browser.find_elements(By.CSS_SELECTOR, f'#job-{jobs["dead2"]} button')  # admin: actions
    browser.save_screenshot(str(shots / "dashboard-dead.png"))
    browser.get(dashboard.url + f"/jobs/{dead}")
    browser.find_element(By.ID, "retry").click()
    at(browser, f"/jobs/{dead}?did=retried")
    assert "pending again" in browser.find_element(By.ID, "flash").text
    assert state_of(db, dead) == "pending"
    # the browser's own request without the session: refused
    browser.delete_all_cookies()
    browser.get(dashboard.url + f"/jobs/{jobs['dead2']}")
    assert not browser.find_elements(By.ID, "retry")
    status, _, _ = dashboard.request("POST", f"/jobs/{jobs['dead2']}/retry", {})
    assert status == 403 and state_of(db, jobs["dead2"]) == "dead"
    for name in ("dashboard-topics.png", "dashboard-job.png", "dashboard-dead.png"):
        assert (shots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_in_a_browser_the_topics_refresh_the_search_box_finds_and_dead_jobs_re_drive_at_once(
        browser: Any, dashboard: Dashboard, db: str, jobs: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(dashboard.url + "/")
    before = browser.find_element(By.ID, "topic-email").text
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.enqueue_many('email', array['{}', '{}', '{}']::jsonb[])")
    # nobody touches the page: it reloads itself
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    reloading = (NoSuchElementException, StaleElementReferenceException)  # read mid-reload
    WebDriverWait(browser, 12, ignored_exceptions=reloading).until(
        lambda b: b.find_element(By.ID, "topic-email").text != before, "the topics page to refresh itself")
    box = browser.find_element(By.ID, "find")
    box.send_keys(str(jobs["dead2"]))
    browser.find_element(By.ID, "find-go").click()
    at(browser, f"/jobs/{jobs['dead2']}")
    browser.find_element(By.ID, "login").click()
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    browser.find_element(By.ID, "submit").click()
    at(browser, f"/jobs/{jobs['dead2']}?did=login")
    browser.get(dashboard.url + "/jobs?topic=invoice")
    browser.find_element(By.ID, "retry-dead").click()
    at(browser, "/jobs?topic=invoice&did=retried-dead")  # back on the page it was sent from
    assert "re-driven" in browser.find_element(By.ID, "flash").text
    assert [state_of(db, i) for i in (jobs["dead"], jobs["dead2"])] == ["pending", "pending"]


def test_a_job_s_page_lists_its_durable_steps_escaped_and_bounded(
        dashboard: Dashboard, db: str) -> None:
    """docs/dashboard.md, "A job's durable steps": the first MAX_STEPS, in the order
    finished, results escaped; a job without steps shows no such table."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('steps.page')")
        job_id = conn.execute("select id from brooq.enqueue('steps.page', '{}')").fetchone()[0]
        token = conn.execute("select lease_token from brooq.claim('w-steps', array['steps.page'])").fetchone()[0]
        conn.execute("select brooq.checkpoint('w-steps', %s, %s, 'charge', %s)",
                     [job_id, token, Jsonb({"card": "<script>alert(1)</script>"})])
        conn.execute("select brooq.checkpoint('w-steps', %s, %s, 'step-' || n, to_jsonb(n))"
                     " from generate_series(1, %s) n", [job_id, token, html.MAX_STEPS])
        plain = conn.execute("select id from brooq.enqueue('steps.page', '{}')").fetchone()[0]
    status, page = dashboard.get(f"/jobs/{job_id}")
    assert status == 200 and 'id="steps"' in page
    assert page.count('<tr id="step-') == html.MAX_STEPS  # the first ones, then the note
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    shown = re.findall(r'<tr id="step-\d+"><td>([^<]*)</td>', page)
    assert shown == ["charge", *(f"step-{n}" for n in range(1, html.MAX_STEPS))]  # in the order finished
    assert "brooq job ID --json lists them all" in page
    assert 'id="steps"' not in dashboard.get(f"/jobs/{plain}")[1]  # a job that ran no step
