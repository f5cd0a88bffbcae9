"""docs/cli.md: the examples whose output is a refusal (`brooq: error: ...`, a usage
line), and the topic's story (declare-topic, alter-topic, topic, pause, resume, in
the page's order), are run in a fresh database with brooq deployed and the topic
`email` declared, and print what the page shows (instants compared as instants).

Which examples run: every `$ brooq ...` line of a ``` block whose shown output ends
with an error line (`brooq: error:`, `brooq: ошибка:`), unless it names a server of
its own (`--dsn`, or a comment "a database ..."), reads the environment (a comment
"in the environment") or pipes; a comment naming BROOQ_DSN runs it without one. A leading `BROOQ_LANG=xx` is set for the command, `< /dev/null` is its
stdin (the default here), and `myapp.py` is the page's own example module. A shown
line `...` stands for any lines. The other examples (a worker's progress, the demo,
tables of a running queue) show times and ids of the run that made them: the tests of
each command check their form (test_cli.py, test_progress.py, test_demo.py).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psycopg
from conftest import ROOT
from helpers import COMMAND

PAGE = ROOT / "docs" / "cli.md"
ERROR = re.compile(r"^brooq: (error|ошибка): ")


@dataclass(frozen=True)
class Example:
    line: int  # of the `$ ` line in the page
    command: str  # without the `$ ` and a trailing comment
    shown: tuple[str, ...]


def examples() -> list[Example]:
    lines = PAGE.read_text().split("\n")
    found: list[Example] = []
    inside = False
    current: tuple[int, str] | None = None
    shown: list[str] = []

    def flush() -> None:
        if current is not None:
            found.append(Example(current[0], current[1], tuple(shown)))

    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            if inside:
                flush()
                current, shown = None, []
            inside = not inside
            continue
        if not inside:
            continue
        if line.startswith("$ "):
            flush()
            command = line[2:]
            if " #" in command:
                command = command[:command.index(" #")]
            current, shown = (number, command.strip()), []
        elif current is not None:
            shown.append(line)
    return found


def runs_here(e: Example) -> bool:
    text = PAGE.read_text().split("\n")[e.line - 1]
    words = e.command.split()
    if "brooq" not in words[:2] or not e.shown or not ERROR.match(e.shown[-1]):
        return False
    comment = text.partition(" #")[2]
    if "in the environment" in comment or "a database" in comment or any(
            op in e.command for op in ("|", "2>", "$(")):
        return False
    return "--dsn" not in words  # a server of its own (another database, a port)


CHECKED = [e for e in examples() if runs_here(e)]

# Examples that succeed and show no id nor clock of the run that made them: the topic's
# settings. They change the topic, so they run one after the other, in the page's order.
STORY_COMMANDS = ("declare", "declare-topic", "alter-topic", "topic", "pause", "resume")
STORY = [e for e in examples() if e.command.split()[:2] in (["brooq", c] for c in STORY_COMMANDS)
         and e.shown and not ERROR.match(e.shown[-1]) and "--dsn" not in e.command.split()]
INSTANT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\+00:00")


def instants_as_such(lines: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(INSTANT.sub("<instant>", line) for line in lines)


def matches(shown: tuple[str, ...], actual: list[str]) -> bool:
    """Whether the shown lines are the actual ones, a shown `...` standing for any lines."""
    pattern = "\n".join(".*?" if line == "..." else re.escape(line) for line in shown)
    return re.fullmatch(pattern.replace("\n.*?\n", "(\n.*?)?\n"), "\n".join(actual), re.DOTALL) is not None


def myapp(directory: Path) -> None:
    """The page's myapp.py (the ```python block of `brooq worker`) and mytasks.py (of
    `brooq declare`)."""
    for name in ("myapp.py", "mytasks.py"):
        m = re.search(rf"`{re.escape(name)}`:\n\n```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
        assert m is not None, f"docs/cli.md lost its {name}"
        (directory / name).write_text(m.group(1))


# The state the refusals were shown in: brooq deployed, the topics email (with 3 jobs
# done) and report.
PREAMBLE = """
select brooq.declare_topic('email', max_attempts => 5);
select brooq.declare_topic('report');
do $$
declare
    c record;
begin
    perform brooq.enqueue_many('email', array['{}', '{}', '{}']::jsonb[]);
    for c in select * from brooq.claim('doc', array['email'], 3) loop
        perform brooq.settle(c.id, 'doc', c.lease_token, 'done');
    end loop;
end
$$;
"""


def run(example: Example, dsn: str, cwd: Path) -> list[str]:
    """What the example's command prints (stdout, then stderr), run as the page shows it."""
    words = shlex.split(example.command.replace("< /dev/null", ""))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    env |= {"BROOQ_DSN": dsn, "LANG": "C.UTF-8", "LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": ""}
    if "BROOQ_DSN" in PAGE.read_text().split("\n")[example.line - 1].partition(" #")[2]:
        del env["BROOQ_DSN"]
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "brooq", example
    done = subprocess.run([*COMMAND, *words[1:]], capture_output=True, text=True, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)
    out = (done.stdout + done.stderr).rstrip("\n").split("\n")
    expected = (1, 2) if ERROR.match(example.shown[-1]) else (0,)
    return out if done.returncode in expected else [f"(exit status {done.returncode})", *out]


def test_the_refusals_and_the_topic_settings_on_the_page_are_what_brooq_prints(db: str, tmp_path: Path) -> None:
    assert len(CHECKED) >= 15, [e.command for e in CHECKED]
    assert len(STORY) >= 7, [e.command for e in STORY]
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(PREAMBLE)
    myapp(tmp_path)
    drifted = []
    with ThreadPoolExecutor(4) as pool:  # refusals change nothing: any order will do
        printed = list(pool.map(lambda e: run(e, db, tmp_path), CHECKED))
    printed += [run(e, db, tmp_path) for e in STORY]  # after the refusals: they change the topic
    for example, actual in zip(CHECKED + STORY, printed, strict=True):
        if example in STORY:
            example, actual = Example(example.line, example.command,
                                      instants_as_such(example.shown)), list(instants_as_such(actual))
        if not matches(example.shown, actual):
            drifted.append(f"docs/cli.md line {example.line}: $ {example.command}\nshown:\n"
                           + "\n".join(example.shown) + "\nprinted:\n" + "\n".join(actual))
    assert not drifted, "\n\n".join(drifted)
