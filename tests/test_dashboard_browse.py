"""The dashboard's jobs page (docs/dashboard.md, "Browsing jobs"): every state, its
filters, pages by keyset, the read budget of a filter no index answers, the bulk cancel
and re-drive with their confirmation and cap, a workflow's tree on a job's page; the
probes of docs/security.md's rows for them; and a real browser on the new pages.

The merge of the groups a list reads (brooq.tools.dashboard_browse) is tested without a
database first.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from brooq.tools import dashboard_browse as listing
from brooq.tools import queries as tool_queries
from brooq.tools.dashboard_browse import FilterError, Filters, Scanned
from test_dashboard import TOKEN, Dashboard, at, browser, start_dashboard, state_of  # noqa: F401 (a fixture)

# --- without a database -------------------------------------------------------------


def test_a_payload_filter_is_a_containment_and_anything_else_is_refused() -> None:
    assert json.loads(listing.containment("customer = 42")) == {"customer": 42}
    assert json.loads(listing.containment("payload.order.id = 7")) == {"order": {"id": 7}}
    assert json.loads(listing.containment('name = "Ann"')) == {"name": "Ann"}
    assert json.loads(listing.containment("name = Ann O'Neil")) == {"name": "Ann O'Neil"}
    assert json.loads(listing.containment("n = 1'; drop table brooq.job; --")) == \
        {"n": "1'; drop table brooq.job; --"}  # a text, bound as jsonb: never SQL
    assert json.loads(listing.containment('{"customer": 42, "vip": true}')) == {"customer": 42, "vip": True}
    assert json.loads(listing.containment("x = NaN")) == {"x": "NaN"}  # not JSON: a text
    for bad in ("customer", "= 3", "a..b = 1", "[1, 2]", '{"a": NaN}', "{nope"):
        with pytest.raises(FilterError):
            listing.containment(bad)
    with pytest.raises(FilterError, match="dash.filter_too_long"):
        Filters.of({"payload": "a = " + "x" * 300})
    with pytest.raises(FilterError, match="dash.filter_too_long"):
        Filters.of({"key": "k" * 201})
    with pytest.raises(FilterError, match="dash.choose_state"):
        Filters.of({"state": "pending'--"})


def rows(grp: str, ids: list[int], hits: list[int] | None = None) -> list[Scanned]:
    hit = set(ids if hits is None else hits)
    return [Scanned(grp, i, i in hit, n, None, None, None) for n, i in enumerate(ids, 1)]


def test_the_merge_shows_only_what_every_group_read_and_goes_on_from_there() -> None:
    plan = listing.plan(Filters(state="dead"), ["a", "b"], None, page=3)
    assert plan.order is listing.NEWEST and plan.params["keep"] == 5
    scan = plan.params["scan"]
    # a returned as many rows as it may (keep): known down to 10; b is exhausted
    page = listing.merge(plan, rows("a/dead", [20, 18, 15, 12, 10]) + rows("b/dead", [19, 11]))
    assert page.ids == [20, 19, 18] and page.next == "18" and not page.partial
    # a read its whole budget down to 14 with one hit: nothing past 14 is shown
    budget = rows("a/dead", list(range(10_000, 10_000 - scan, -1)), hits=[9_999])
    page = listing.merge(plan, [budget[1], budget[-1]] + rows("b/dead", [19, 11]))
    assert page.ids == [9_999] and page.next == str(budget[-1].id) and page.partial
    # every group exhausted: the last page
    page = listing.merge(plan, rows("a/dead", [5]) + rows("b/dead", [7]))
    assert page.ids == [7, 5] and page.next is None
    with pytest.raises(FilterError):
        listing.plan(Filters(state="done"), ["a"], "12")  # a cursor of another order
    with pytest.raises(FilterError):
        listing.plan(Filters(state="pending"), ["a"], "1_99999999999999999999_3")


# --- against a database -------------------------------------------------------------

FIXTURE_SQL = """
select brooq.declare_topic('shop', max_attempts => 1);
select brooq.declare_topic('mail', max_attempts => 1);
"""


@pytest.fixture
def shop(db: str) -> dict[str, Any]:
    """The topic shop with jobs in every state, customers 42 and 7, an HTML payload; a
    workflow of three generations; the topic mail with a few jobs."""
    ids: dict[str, Any] = {}
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(FIXTURE_SQL)

        def enqueue(payload: dict[str, Any], **kw: Any) -> int:
            args = "".join(f", {k} => %({k})s" + ("::bigint[]" if k == "after" else "") for k in kw)
            row = conn.execute(f"select id from brooq.enqueue('shop', %(p)s::jsonb{args})",
                               {"p": json.dumps(payload), **kw}).fetchone()
            assert row is not None
            return int(row[0])

        def claim(n: int) -> list[tuple[int, int]]:
            return [(r[0], r[1]) for r in conn.execute(
                "select id, lease_token from brooq.claim('w-1', array['shop'], %s, '5m')", [n])]

        def settle(job: tuple[int, int], outcome: str, error: str | None = None) -> None:
            conn.execute("select brooq.settle(%s, 'w-1', %s, %s, %s)", [job[0], job[1], outcome, error])

        # first the jobs that will be claimed and settled: each its state
        to_settle = [enqueue({"customer": 42, "step": s}) for s in ("done", "dead", "run")]
        claimed = dict(zip(to_settle, claim(3), strict=True))
        settle(claimed[to_settle[0]], "done")
        settle(claimed[to_settle[1]], "dead", "KeyError: <b>boom</b>")
        conn.execute("select brooq.alter_topic('shop', max_attempts => 3)")
        ids["done"], ids["dead"], ids["processing"] = to_settle
        ids["failed"] = enqueue({"customer": 7})
        conn.execute("update brooq.job set max_attempts = 3 where id = %s", [ids["failed"]])
        settle(claim(1)[0], "failed", "try again")
        canceled = enqueue({"customer": 7, "note": "<script>alert(1)</script>"})
        conn.execute("select brooq.cancel(%s)", [canceled])
        ids["canceled"] = canceled
        ids["pending"] = [enqueue({"customer": 42}, priority=5), enqueue({"customer": 7}),
                          enqueue({"customer": 42}, idempotency_key="order-9")]
        ids["scheduled"] = enqueue({"customer": 42}, delay=timedelta(hours=1))
        parent = enqueue({"customer": 1}, delay=timedelta(hours=1))
        child = enqueue({"customer": 1}, after=[parent])
        grandchild = enqueue({"customer": 1}, after=[child])
        ids["workflow"] = (parent, child, grandchild)
        ids["waiting"] = [child, grandchild]
        ids["html"] = enqueue({"note": "<script>alert(1)</script>", "customer": 9}, priority=-1)
        ids["mail"] = [r[0] for r in conn.execute(
            "select id from brooq.enqueue_many('mail', array['{\"customer\": 42}', '{}']::jsonb[])")]
    return ids


@pytest.fixture
def dash(db: str, shop: dict[str, Any]) -> Iterator[Dashboard]:
    d = start_dashboard(db, "--token", TOKEN)
    try:
        yield d
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)


def listed(d: Dashboard, query: str, **headers: str) -> list[int]:
    status, text = d.get("/jobs?" + query, **headers)
    assert status == 200, text
    return [int(i) for i in re.findall(r'<tr id="job-(\d+)">', text)]


def test_every_state_is_listed_and_filtered(dash: Dashboard, shop: dict[str, Any]) -> None:
    pending = shop["pending"]
    assert listed(dash, "topic=shop&state=pending") == [pending[0], pending[1], pending[2], shop["html"]]
    assert listed(dash, "state=scheduled") == [shop["scheduled"], shop["workflow"][0]]
    assert listed(dash, "state=waiting") == sorted(shop["waiting"], reverse=True)
    assert listed(dash, "state=processing") == [shop["processing"]]
    assert listed(dash, "state=failed") == [shop["failed"]]
    assert listed(dash, "state=done") == [shop["done"]]
    assert listed(dash, "state=dead") == [shop["dead"]]
    assert listed(dash, "state=canceled") == [shop["canceled"]]
    assert listed(dash, "") == [shop["failed"], shop["dead"]]  # the default: dead and failed
    # an idempotency key; a payload field, as field = value and as a JSON object
    assert listed(dash, "state=pending&key=order-9") == [pending[2]]
    assert listed(dash, "state=pending&key=order-9&topic=mail") == []
    assert listed(dash, "state=pending&payload=" + urllib.parse.quote("customer = 42")) == \
        [pending[0], pending[2], shop["mail"][0]]
    assert listed(dash, "state=pending&topic=shop&payload=" + urllib.parse.quote('{"customer": 42}')) == \
        [pending[0], pending[2]]
    assert listed(dash, "state=done&payload=" + urllib.parse.quote("payload.step = done")) == [shop["done"]]
    # a topic nobody declared is 404, a state nobody knows 400
    assert dash.get("/jobs?topic=nope&state=pending")[0] == 404
    assert dash.get("/jobs?state=bogus")[0] == 400


def test_a_filter_that_is_sql_ish_or_huge_is_bound_and_cut_short(
        dash: Dashboard, db: str, shop: dict[str, Any]) -> None:
    """docs/security.md: a filter is a bound parameter (the payload's as jsonb), at most
    200 characters, and a cursor is numbers or 400."""
    for text in ("n = 1'; drop table brooq.job; --", "x' or '1'='1", "customer = 42) or (true"):
        for field in ("payload", "key"):
            status, page = dash.get(f"/jobs?state=pending&{field}=" + urllib.parse.quote(text))
            assert status == 200 and 'id="no-match"' in page, text
    status, page = dash.get("/jobs?topic=" + urllib.parse.quote("shop' or '1'='1") + "&state=pending")
    assert status == 404
    for query in ("payload=" + "a%3D" + "x" * 250, "key=" + "k" * 201, "topic=" + "t" * 201,
                  "payload=" + urllib.parse.quote('{"a": ' * 150 + "1" + "}" * 150),
                  "state=pending&after=1'--", "state=done&after=1_2_3", "state=dead&after=" + "9" * 40,
                  "state=pending&after=1_999999999999999999_1"):
        status, page = dash.get("/jobs?" + query)
        assert status == 400 and "<script>" not in page, query
    assert state_of(db, shop["done"]) == "done"  # the table is there, as it was


def test_a_payload_with_markup_is_escaped_in_the_list_and_the_tree(
        dash: Dashboard, shop: dict[str, Any]) -> None:
    status, page = dash.get("/jobs?state=pending&topic=shop")
    assert status == 200 and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page
    status, page = dash.get("/jobs?state=canceled")
    assert "&lt;script&gt;" in page and "<script>" not in page
    status, page = dash.get("/jobs?state=dead&topic=shop")
    assert "&lt;b&gt;boom&lt;/b&gt;" in page and "<b>boom" not in page
    # the payload filter's text is shown back escaped in its box
    status, page = dash.get("/jobs?state=pending&payload=" + urllib.parse.quote('x = "><script>y</script>'))
    assert status == 200 and "<script>y" not in page and "&quot;&gt;&lt;script&gt;y" in page


def test_a_job_page_shows_its_workflow_tree(dash: Dashboard, shop: dict[str, Any]) -> None:
    parent, child, grandchild = shop["workflow"]
    status, page = dash.get(f"/jobs/{child}")
    assert status == 200
    tree = re.search(r'<div id="tree">(.*?)</div><p class="muted">', page, re.DOTALL)
    assert tree is not None
    up = re.search(r'<div id="tree-up">(.*?)</div>', tree.group(1), re.DOTALL)
    down = re.search(r'<div id="tree-down">(.*?)</div>', tree.group(1), re.DOTALL)
    assert up is not None and f'href="/jobs/{parent}"' in up.group(1)
    assert down is not None and f'href="/jobs/{grandchild}"' in down.group(1)
    # from the grandchild, two levels up
    page = dash.get(f"/jobs/{grandchild}")[1]
    up = re.search(r'<div id="tree-up">(.*?)</div>', page, re.DOTALL)
    assert up is not None and f'/jobs/{child}"' in up.group(1) and f'/jobs/{parent}"' in up.group(1)
    assert 'id="tree"' not in dash.get(f"/jobs/{shop['done']}")[1]  # no workflow: no tree


def test_a_tree_is_bounded_in_depth_and_breadth(db: str) -> None:
    from brooq.tools import dashboard_html as html
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('t')")
        root = conn.execute("select id from brooq.enqueue('t', delay => '1h')").fetchone()[0]  # type: ignore[index]
        level = [root]
        for _ in range(5):  # 5 generations of 12 children each of the first node
            kids = [r[0] for r in conn.execute(
                "select id from brooq.enqueue_many('t', array_fill('{}'::jsonb, array[12]),"
                " after_child => array(select generate_series(1, 12)),"
                " after_parent => array_fill(%s::bigint, array[12]))", [level[0]])]
            level = kids
        nodes = conn.execute(tool_queries.DASHBOARD_JOB_TREE,
                             {"id": root, "depth": html.TREE_DEPTH, "fan": html.TREE_FAN,
                              "nodes": html.TREE_NODES}).fetchall()
    downs = [n for n in nodes if n[0] == "down"]
    assert max(n[4] for n in downs) == html.TREE_DEPTH
    assert len(downs) == html.TREE_DEPTH * html.TREE_FAN  # 10 children a level, the first's only


@pytest.fixture
def deep(db: str) -> Iterator[Dashboard]:
    """Topics a and b: 230 pending jobs of priorities 0..2, 130 done, 130 dead in a;
    120 dead in b; 12,000 done in a with the oldest matching payload {"needle": 1}."""
    with psycopg.connect(db, autocommit=True) as conn:
        for t in ("a", "b"):
            conn.execute("select brooq.declare_topic(%s)", [t])
        insert = ("insert into brooq.job (topic, payload, state, priority, attempts, max_attempts,"
                  " available_at, created_at, updated_at)"
                  " select %s, %s::jsonb, %s, g %% 3, 1, 5, now() - make_interval(secs => g %% 7),"
                  " now(), now() - make_interval(secs => g) from generate_series(1, %s) g")
        conn.execute(insert, ["a", '{"needle": 1}', "done", 1])
        conn.execute(insert, ["a", "{}", "done", 12_000])
        conn.execute(insert, ["a", "{}", "pending", 230])
        conn.execute(insert, ["a", "{}", "dead", 130])
        conn.execute(insert, ["b", "{}", "dead", 120])
        conn.execute("vacuum analyze brooq.job")
    d = start_dashboard(db, "--token", TOKEN)
    try:
        yield d
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)


def walk(d: Dashboard, query: str) -> tuple[list[int], int, int]:
    """Every page of a list, by its next links: the ids, the pages, the partial ones."""
    ids, pages, partial = [], 0, 0
    path: str | None = "/jobs?" + query
    while path is not None:
        status, text = d.get(path)
        assert status == 200, text
        ids += [int(i) for i in re.findall(r'<tr id="job-(\d+)">', text)]
        pages += 1
        partial += 'id="partial"' in text
        m = re.search(r'<a id="next" href="([^"]+)"', text)
        path = m.group(1).replace("&amp;", "&") if m else None
        assert pages < 50
    return ids, pages, partial


def test_pages_follow_each_other_by_keyset_in_the_list_s_order(deep: Dashboard, db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        claim_order = [r[0] for r in conn.execute(
            "select id from brooq.jobs where topic = 'a' and state = 'pending'"
            " order by priority desc, available_at, id")]
        dead = [r[0] for r in conn.execute("select id from brooq.jobs where state = 'dead' order by id desc")]
        done = [r[0] for r in conn.execute(
            "select id from brooq.jobs where state = 'done' order by updated_at desc, id desc limit 250")]
    ids, pages, _ = walk(deep, "topic=a&state=pending")
    assert ids == claim_order and pages == 3  # 230 in claim order, 100 a page
    ids, pages, _ = walk(deep, "state=dead")  # both topics, merged newest first
    assert ids == dead and pages == 3
    status, text = deep.get("/jobs?state=done&topic=a")
    assert status == 200
    first = [int(i) for i in re.findall(r'<tr id="job-(\d+)">', text)]
    m = re.search(r'<a id="next" href="([^"]+)"', text)
    assert m is not None and "after=" in m.group(1) and "offset" not in m.group(1)
    second = [int(i) for i in re.findall(r'<tr id="job-(\d+)">', deep.get(m.group(1).replace("&amp;", "&"))[1])]
    assert first + second == done[:200]


def test_a_filter_no_index_answers_reads_a_bounded_budget_a_page(deep: Dashboard, db: str) -> None:
    """The needle is the oldest of 12,001 done jobs: the first page reads its budget
    (10,000 index entries), shows nothing, says so, and the next finds it."""
    ids, pages, partial = walk(deep, "state=done&topic=a&payload=needle%3D1")
    with psycopg.connect(db, autocommit=True) as conn:
        needle = conn.execute("select id from brooq.jobs where payload = '{\"needle\": 1}'").fetchone()[0]  # type: ignore[index]
    assert ids == [needle] and pages == 2 and partial == 1
    # what one page's statement reads of brooq.job: at most the budget
    with psycopg.connect(db, autocommit=True) as conn:
        plan = listing.plan(Filters.of({"state": "done", "payload": "needle = 1"}), ["a", "b"], None)
        with conn.transaction():
            read = ("select pg_stat_get_xact_tuples_returned('brooq.job'::regclass)"
                    " + pg_stat_get_xact_tuples_fetched('brooq.job'::regclass)")
            before = conn.execute(read).fetchone()[0]  # type: ignore[index]
            conn.execute(plan.order.query, plan.params).fetchall()
            tuples = conn.execute(read).fetchone()[0] - before  # type: ignore[index]
        assert tuples <= listing.MAX_SCANNED + 10, tuples


def login(d: Dashboard) -> str:
    """Log in over HTTP: the session cookie (the bulk forms carry their CSRF field)."""
    status, headers, _ = d.request("POST", "/login", {"token": TOKEN, "next": "/"})
    assert status == 303
    return headers["set-cookie"].split(";")[0]


def bulk_form(d: Dashboard, query: str, cookie: str) -> tuple[int, str, dict[str, str]]:
    status, page = d.get("/jobs/bulk?" + query, cookie=cookie)
    fields = dict(re.findall(r'<input type="hidden" name="([a-z]+)" value="([^"]*)"', page))
    return status, page, {k: v.replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&")
                          for k, v in fields.items()}


def test_bulk_cancel_and_re_drive_confirm_the_count_and_stay_with_this_dashboard(
        dash: Dashboard, db: str, shop: dict[str, Any]) -> None:
    pending = shop["pending"]
    cookie = login(dash)
    query = "state=pending&payload=" + urllib.parse.quote("customer = 42")
    # the list offers it to the admin only
    assert 'id="bulk-cancel"' not in dash.get("/jobs?" + query)[1]
    assert 'id="bulk-cancel"' in dash.get("/jobs?" + query, cookie=cookie)[1]
    assert 'id="bulk-retry"' not in dash.get("/jobs?" + query, cookie=cookie)[1]
    assert dash.get("/jobs/bulk?action=cancel&" + query)[0] == 403  # no session
    status, page, fields = bulk_form(dash, "action=cancel&" + query, cookie)
    assert status == 200 and "3 jobs match." in page and 'id="confirm"' in page
    assert fields["payload"] == "customer = 42" and fields["state"] == "pending"
    # refused: no session, no CSRF field, another origin, a GET
    assert dash.request("POST", "/jobs/bulk/cancel", fields)[0] == 403
    assert dash.request("POST", "/jobs/bulk/cancel", {**fields, "csrf": "0" * 64}, {"cookie": cookie})[0] == 403
    assert dash.request("POST", "/jobs/bulk/cancel", fields,
                        {"cookie": cookie, "origin": "http://evil.example"})[0] == 403
    assert dash.get("/jobs/bulk/cancel?" + query, cookie=cookie)[0] == 405
    assert [state_of(db, i) for i in (pending[0], pending[2])] == ["pending", "pending"]
    # a re-drive of pending jobs, or a cancel of dead ones, is no bulk action
    assert dash.request("POST", "/jobs/bulk/retry", fields, {"cookie": cookie})[0] == 400
    assert bulk_form(dash, "action=retry&" + query, cookie)[0] == 400
    # confirmed: exactly the list's jobs, through brooq.cancel
    status, headers, _ = dash.request("POST", "/jobs/bulk/cancel", fields, {"cookie": cookie})
    assert status == 303 and headers["location"].startswith("/jobs?state=pending&payload=")
    assert "did=bulk-canceled&n=3" in headers["location"]
    assert "3 jobs canceled." in dash.get(headers["location"], cookie=cookie)[1]
    assert [state_of(db, i) for i in (pending[0], pending[2], shop["mail"][0])] == ["canceled"] * 3
    assert [state_of(db, i) for i in (pending[1], shop["scheduled"])] == ["pending", "pending"]
    # a re-drive of the canceled with a key filter, by the bearer token (a script)
    status, headers, _ = dash.request("POST", "/jobs/bulk/retry", {"state": "canceled", "key": "order-9"},
                                      {"authorization": f"Bearer {TOKEN}"})
    assert status == 303 and "n=1" in headers["location"] and state_of(db, pending[2]) == "pending"
    with psycopg.connect(db, autocommit=True) as conn:
        note = conn.execute("select last_error from brooq.jobs where id = %s", [pending[2]]).fetchone()
    assert note is not None and "re-driven from canceled" in str(note[0])  # brooq.retry's own note


def test_a_bulk_action_touches_at_most_its_cap(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('many')")
        conn.execute("select brooq.enqueue_many('many', array_fill('{}'::jsonb, array[%s]))",
                     [listing.BULK_MAX + 5])
    d = start_dashboard(db, "--token", TOKEN)
    try:
        cookie = login(d)
        status, page, fields = bulk_form(d, "action=cancel&state=pending&topic=many", cookie)
        assert status == 200 and f"at least {listing.BULK_MAX} jobs match" in page
        status, headers, _ = d.request("POST", "/jobs/bulk/cancel", fields, {"cookie": cookie})
        assert status == 303 and f"n={listing.BULK_MAX}" in headers["location"]
        with psycopg.connect(db, autocommit=True) as conn:
            left = conn.execute("select count(*) from brooq.jobs where topic = 'many' and state = 'pending'"
                                ).fetchone()
        assert left is not None and left[0] == 5
        assert "5 jobs match." in bulk_form(d, "action=cancel&state=pending&topic=many", cookie)[1]
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)


# --- the browser ----------------------------------------------------------------------

@pytest.mark.slow
def test_in_a_browser_filter_page_on_and_cancel_a_filtered_set(
        browser: Any, deep: Dashboard, db: str) -> None:  # noqa: F811 (the fixture)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    with psycopg.connect(db, autocommit=True) as conn:
        marked = [r[0] for r in conn.execute(
            "select id from brooq.enqueue_many('b', array_fill('{\"customer\": 42}'::jsonb, array[3]))")]
    browser.get(deep.url + "/jobs")
    Select(browser.find_element(By.ID, "topic")).select_by_value("a")
    Select(browser.find_element(By.ID, "state")).select_by_value("pending")
    browser.find_element(By.ID, "filter").click()
    at(browser, "/jobs?topic=a&state=pending&key=&payload=")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr[id^=job-]")) == listing.PAGE
    first = browser.find_elements(By.CSS_SELECTOR, "tr[id^=job-]")[0].get_attribute("id")
    browser.find_element(By.ID, "next").click()
    browser.find_element(By.ID, "first")  # the second page links back to the first
    assert browser.find_elements(By.CSS_SELECTOR, "tr[id^=job-]")[0].get_attribute("id") != first
    # log in, filter by a payload field, cancel the three through the confirmation
    browser.get(deep.url + "/login?next=/jobs")
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    browser.find_element(By.ID, "submit").click()
    at(browser, "/jobs?did=login")
    Select(browser.find_element(By.ID, "state")).select_by_value("pending")
    browser.find_element(By.ID, "payload").send_keys("customer = 42")
    browser.find_element(By.ID, "filter").click()
    at(browser, "payload=customer+%3D+42")  # the filtered list, not the rows of the page before
    assert {int(e.get_attribute("id")[4:]) for e in browser.find_elements(By.CSS_SELECTOR, "tr[id^=job-]")} \
        == set(marked)
    browser.find_element(By.ID, "bulk-cancel").click()
    assert "3 jobs match." in browser.find_element(By.ID, "bulk-count").text
    browser.find_element(By.ID, "confirm").click()
    WebDriverWait(browser, 10).until(lambda b: "/jobs/bulk" not in b.current_url, "the list after the action")
    assert "3 jobs canceled." in browser.find_element(By.ID, "flash").text
    assert [state_of(db, i) for i in marked] == ["canceled"] * 3
    assert browser.find_elements(By.ID, "no-match")  # the list, refreshed: none pending left
    with psycopg.connect(db, autocommit=True) as conn:
        row = conn.execute("select count(*) from brooq.jobs where state = 'canceled'").fetchone()
    assert row is not None and row[0] == 3


@pytest.mark.slow
def test_in_a_browser_a_job_s_workflow_tree_links_its_family(
        browser: Any, dash: Dashboard, shop: dict[str, Any]) -> None:  # noqa: F811 (the fixture)
    from selenium.webdriver.common.by import By

    parent, _child, grandchild = shop["workflow"]
    browser.get(dash.url + f"/jobs/{grandchild}")
    tree = browser.find_element(By.ID, "tree")
    assert "waiting" in tree.text and str(parent) in tree.text
    browser.find_element(By.CSS_SELECTOR, f'#tree-up a[href="/jobs/{parent}"]').click()
    at(browser, f"/jobs/{parent}")
    assert browser.find_element(By.CSS_SELECTOR, f'#tree-down a[href="/jobs/{grandchild}"]')


def test_utc_cursor_round_trip() -> None:
    at_ = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    row = Scanned("a", 7, True, 1, 2, at_, at_)
    cursor = listing.CLAIM.cursor(row)
    assert listing.CLAIM.params(cursor) == {"priority": 2, "at": at_, "id": 7}
    assert listing.FINISHED.params(listing.FINISHED.cursor(row)) == {"at": at_, "id": 7}
