"""docs/sql-api.md is a true psql transcript: its ```psql blocks, run in order in one
psql session on a fresh database with sql/install.sql applied, print exactly what the
page shows.

The rule (also at the top of the page, "How the examples were produced"):

- the ```sql preamble block runs first; its output is not shown;
- every ```psql block is input and output, as `psql -a` prints them: a line that
  starts with an SQL command word (select, insert, set, ...) or a backslash begins
  input, which runs to the line ending in `;` or holding a backslash command; every
  other line (`notify | t` of expanded output too) is psql's output;
- ```psql pg_cron blocks run in a second session in the database where pg_cron is
  installed (the test cluster's `postgres`, brooq deployed there by sqitch), only
  when there is one;
- compared after: trailing blanks and trailing empty lines dropped, `LOCATION:`
  lines dropped, `PID <digits>` in notifications made `PID <pid>`.

When the schema changes on purpose, BROOQ_WRITE_SQL_API=1 rewrites the page's
blocks from the actual output; review the diff before committing it.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from dataclasses import dataclass

import psycopg
import pytest
from conftest import ROOT, Server, psql_file
from psycopg import sql

PAGE = ROOT / "docs" / "sql-api.md"
DB_NAME = "brooq_sql_api"  # the page shows it (schedule_maintenance's 55000 error)

COMMAND_WORDS = frozenset({
    "select", "insert", "update", "delete", "with", "values", "table", "set", "reset", "show",
    "call", "do", "begin", "commit", "rollback", "savepoint", "release", "create", "drop",
    "alter", "grant", "revoke", "listen", "unlisten", "notify", "truncate", "explain"})
FENCE = re.compile(r"^( *)```(\S*)[ \t]*(.*?)\s*$")
MARKER = "::block {}"


@dataclass
class Block:
    line: int  # 1-based line of the block's first content line in the page
    indent: str
    tags: tuple[str, ...]  # the fence's info string: ("psql",), ("psql", "pg_cron"), ("sql", "preamble")
    text: str  # the content, without the fence's indentation

    @property
    def statements(self) -> list[str]:
        return input_lines(self.text, self.line)


def page_blocks(page: str | None = None) -> list[Block]:
    lines = (page if page is not None else PAGE.read_text()).split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(2):
            i += 1
            continue
        indent, tags = m.group(1), (m.group(2), *m.group(3).split())
        j = i + 1
        while not re.match(rf"^{indent}```\s*$", lines[j]):
            j += 1
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:j]]
        blocks.append(Block(i + 2, indent, tags, "\n".join(body)))
        i = j + 1
    return blocks


def starts_input(line: str) -> bool:
    if line.startswith("\\"):
        return True
    m = re.match(r"([a-z]+)\b(\s*\|)?", line)  # `notify | t` is a line of expanded output
    return m is not None and m.group(1) in COMMAND_WORDS and not m.group(2)


def ends_input(line: str) -> bool:
    code = re.sub(r"\s+--\s.*$", "", line).rstrip()
    return line.startswith("\\") or code.endswith(";") or bool(re.search(r"\\g\w*$", code))


def input_lines(text: str, first_line: int) -> list[str]:
    """The lines of a transcript that psql reads (the rest is what it printed)."""
    found: list[str] = []
    inside = False
    for line in text.split("\n"):
        if inside or starts_input(line):
            found.append(line)
            inside = not ends_input(line)
    if inside:
        raise AssertionError(f"{PAGE.name}:{first_line}: a statement in this block does not end")
    return found


def normalise(text: str) -> str:
    lines = [line.rstrip() for line in text.split("\n") if not line.startswith("LOCATION:  ")]
    text = "\n".join(lines).rstrip("\n")
    return re.sub(r"(received from server process with PID) \d+\.", r"\1 <pid>.", text)


def run_session(dsn: str, preamble: Block, blocks: list[Block], setup: str = "") -> list[str]:
    """Run the blocks in one `psql -a` session; the output of each, normalised."""
    script = [setup, preamble.text]
    for n, block in enumerate(blocks):
        script += [f"\\echo {MARKER.format(n)}", *block.statements]
    done = subprocess.run(["psql", "-X", "-a", "-d", dsn], input="\n".join(script) + "\n", check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                          env={**os.environ, "LC_MESSAGES": "C"})  # "(1 row)", not a translation
    outputs = re.split(r"^\\echo ::block \d+\n::block \d+\n", done.stdout, flags=re.MULTILINE)[1:]
    assert len(outputs) == len(blocks), f"psql stopped early:\n{done.stdout[-3000:]}"
    return [normalise(out) for out in outputs]


def compare(blocks: list[Block], actual: list[str], *, page: bool = True) -> None:
    """Raise at the first block whose output differs; with BROOQ_WRITE_SQL_API set,
    first rewrite the page's blocks (only when they are the page's: ``page``)."""
    if page and os.environ.get("BROOQ_WRITE_SQL_API"):
        write_back(blocks, actual)
    for block, out in zip(blocks, actual, strict=True):
        expected = normalise(block.text)
        if out != expected:
            want, got = expected.split("\n"), out.split("\n")
            first = next(i for i, pair in enumerate(zip([*want, None], [*got, None])) if pair[0] != pair[1])
            diff = "\n".join(difflib.unified_diff(want, got, "the page", "psql", lineterm=""))
            raise AssertionError(
                f"docs/sql-api.md:{block.line + first}: psql printed something else, in the "
                f"block from line {block.line} (block {blocks.index(block) + 1} of {len(blocks)} "
                f"run in this session; later ones may differ only because of it).\n{diff}\n\n"
                f"If the change is intended, rerun with "
                f"BROOQ_WRITE_SQL_API=1 to rewrite the page's blocks from psql's output (that run "
                f"still fails), then read the diff and fix the prose around them.")


def write_back(blocks: list[Block], actual: list[str]) -> None:
    lines = PAGE.read_text().split("\n")
    for block, out in sorted(zip(blocks, actual, strict=True), key=lambda p: -p[0].line):
        old = len(block.text.split("\n"))
        new = [block.indent + line if line else "" for line in out.split("\n")]
        lines[block.line - 1:block.line - 1 + old] = new
    PAGE.write_text("\n".join(lines))


def preamble(blocks: list[Block]) -> Block:
    found = [b for b in blocks if b.tags == ("sql", "preamble")]
    assert len(found) == 1, "the page needs exactly one ```sql preamble block"
    return found[0]


def transcripts(blocks: list[Block], *tags: str) -> list[Block]:
    return [b for b in blocks if b.tags == ("psql", *tags)]


def test_the_page_is_parsed_as_meant() -> None:
    blocks = page_blocks()
    assert {b.tags for b in blocks if b.tags[0] == "psql"} == {("psql",), ("psql", "pg_cron")}
    main = transcripts(blocks)
    assert len(main) > 30 and sum(len(b.statements) for b in main) > 100
    # a block of output only would test nothing
    assert all(b.statements for b in main + transcripts(blocks, "pg_cron"))
    sample = Block(1, "", ("psql",), "select 1\n  as one;\n one\n-----\n   1\n(1 row)\n\n"
                   "select 2 as x \\gset\n\\echo :x\n2\nset role app;\nSET\nselect 3 \\gx\nnotify | t")
    assert sample.statements == ["select 1", "  as one;", "select 2 as x \\gset", "\\echo :x",
                                 "set role app;", "select 3 \\gx"]


def test_the_sql_api_examples_print_what_the_page_shows(server: Server) -> None:
    blocks = page_blocks()
    roles = re.findall(r"^create role (\w+)", PAGE.read_text(), flags=re.MULTILINE)
    with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
        there = conn.execute("select array_agg(rolname) from pg_roles where rolname = any(%s)",
                             [roles]).fetchone()
    assert there == (None,), f"roles the page creates already exist on the server: {there}"
    server.drop_db(DB_NAME)
    dsn = server.create_db(DB_NAME)
    try:
        psql_file(dsn, ROOT / "sql" / "install.sql")
        main = transcripts(blocks)
        compare(main, run_session(dsn, preamble(blocks), main))
    finally:
        server.drop_db(DB_NAME)
        for role in roles:
            server.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(role)))


def test_the_pg_cron_examples_print_what_the_page_shows(server: Server, tap_dsn: str) -> None:
    blocks = page_blocks()
    cron = transcripts(blocks, "pg_cron")
    assert cron
    with psycopg.connect(tap_dsn, autocommit=True) as conn:
        if conn.execute("select to_regclass('cron.job')").fetchone() == (None,):
            pytest.skip("pg_cron is not installed on this server")
        busy = conn.execute("select count(*) from cron.job").fetchone()
        assert busy == (0,), "cron.job is not empty: the page's job ids assume a fresh pg_cron"
    # as on a fresh cluster: pgTAP's rolled-back schedules used up job ids
    setup = "\\set QUIET on\nalter sequence cron.jobid_seq restart;\n\\set QUIET off"
    compare(cron, run_session(tap_dsn, preamble(blocks), cron, setup=setup))


def test_the_comparison_can_fail() -> None:
    block = Block(10, "", ("psql",), "select 1;\n ?column?\n----------\n        1\n(1 row)")
    with pytest.raises(AssertionError, match=r"sql-api.md:13: psql printed something else, in the block from line 10"):
        compare([block], ["select 1;\n ?column?\n----------\n        2\n(1 row)"], page=False)
