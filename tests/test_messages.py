"""User-facing texts come from a gettext catalogue by key (docs/python-guide.md, "Language")."""

from __future__ import annotations

import ast
import gettext
import os
import re
import string
from pathlib import Path

import pytest
from brooq import messages
from brooq.messages import ENGLISH, PLURALS, _, _n
from helpers import brooq_cli as brooq
from helpers import declare, enqueue

ENGLISH_LOCALE = {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}


def fields(text: str) -> set[tuple[str, str]]:
    """The {name:spec} fields of a str.format text."""
    return {(name, spec or "") for _lit, name, spec, _conv in string.Formatter().parse(text)
            if name is not None}


def test_a_cli_error_is_russian_with_brooq_lang_ru(db: str) -> None:
    done = brooq("job", "999999999", dsn=db, env={**ENGLISH_LOCALE, "BROOQ_LANG": "ru"})
    assert done.returncode == 1
    assert done.stderr == ("brooq: ошибка: задание 999999999 не найдено "
                           "(не было поставлено в очередь или удалено)\n")


def test_the_locale_picks_russian_and_brooq_lang_wins(db: str) -> None:
    ru = {**ENGLISH_LOCALE, "LANG": "ru_RU.UTF-8"}
    assert brooq("job", "999999999", dsn=db, env=ru).stderr.startswith("brooq: ошибка: задание")
    done = brooq("job", "999999999", dsn=db, env={**ru, "BROOQ_LANG": "en"})
    assert done.stderr == "brooq: error: job 999999999 not found (never enqueued, or purged)\n"


def test_cli_confirmations_follow_brooq_lang(db: str) -> None:
    ru = {**ENGLISH_LOCALE, "BROOQ_LANG": "ru"}
    declare(db)
    assert brooq("pause", "mail", dsn=db, env=ru).stdout == "тема mail приостановлена\n"
    assert brooq("pause", "mail", dsn=db, env=ENGLISH_LOCALE).stdout == \
        "topic mail was already paused\n"
    assert brooq("stats", env=ru).stderr.endswith(
        "brooq: ошибка: не указана база данных: передайте --dsn postgresql://... "
        "или задайте BROOQ_DSN\n")


def test_english_by_default(db: str) -> None:
    done = brooq("job", "999999999", dsn=db, env=ENGLISH_LOCALE)
    assert done.stderr == "brooq: error: job 999999999 not found (never enqueued, or purged)\n"


def test_a_bad_dsn_in_russian_keeps_the_database_text() -> None:
    done = brooq("stats", "--dsn", "postgresql://127.0.0.1:1/nope?connect_timeout=2",
                 env={**ENGLISH_LOCALE, "BROOQ_LANG": "ru"})
    assert done.returncode == 1
    assert done.stderr.startswith("brooq: ошибка: "), done.stderr


@pytest.mark.parametrize("lang", ["xx", "de", "fr_FR.UTF-8"])
def test_an_unknown_brooq_lang_falls_back_to_english(db: str, lang: str) -> None:
    done = brooq("job", "999999999", dsn=db, env={**ENGLISH_LOCALE, "BROOQ_LANG": lang})
    assert done.stderr == "brooq: error: job 999999999 not found (never enqueued, or purged)\n"


def test_worker_log_messages_follow_brooq_lang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_LANG", "ru")
    assert _("worker.reconnected", worker="w1", seconds=2.25) == \
        "обработчик w1: соединение с базой восстановлено через 2.2 с"
    monkeypatch.setenv("BROOQ_LANG", "en")
    assert _("worker.reconnected", worker="w1", seconds=2.25) == \
        "worker w1: reconnected to the database after 2.2s"


def nplurals(po: Path) -> int:
    header = messages.read_po(po)[""]
    match = re.search(r"Plural-Forms:\s*nplurals=(\d+);", header)
    assert match, f"{po}: no Plural-Forms header"
    return int(match.group(1))


@pytest.mark.parametrize("po", messages.catalogues(), ids=lambda p: p.parts[-3])
def test_every_catalogue_has_every_key_with_the_same_fields(po: Path) -> None:
    translated = messages.read_po(po)
    translated.pop("", None)  # the header
    plain = {k: v for k, v in translated.items() if "\0" not in k}
    plural = {k.split("\0")[0]: (k.split("\0")[1], v.split("\0"))
              for k, v in translated.items() if "\0" in k}
    assert set(plain) == set(ENGLISH)
    assert set(plural) == set(PLURALS)
    for key, text in ENGLISH.items():
        assert plain[key], key
        assert fields(plain[key]) == fields(text), key
    for key, (one, other) in PLURALS.items():
        plural_id, forms = plural[key]
        assert plural_id == messages.plural_id(key)
        assert fields(one) == fields(other) and ("count", "") in fields(one), key
        assert len(forms) == nplurals(po), key
        for form in forms:
            assert form and fields(form) == fields(one), key


@pytest.mark.parametrize("po", messages.catalogues(), ids=lambda p: p.parts[-3])
def test_the_committed_mo_is_compiled_from_the_po(po: Path) -> None:
    """python -m brooq.messages rebuilds it; gettext reads what compile_mo writes, plurals
    included (each form where the catalogue's Plural-Forms puts it)."""
    mo = po.with_suffix(".mo")
    assert mo.read_bytes() == messages.compile_mo(messages.read_po(po))
    with mo.open("rb") as f:
        catalogue = gettext.GNUTranslations(f)
    for key, text in messages.read_po(po).items():
        if not key:
            continue
        if "\0" not in key:
            assert catalogue.gettext(key) == text
            continue
        singular, plural = key.split("\0")
        forms = text.split("\0")
        seen = {catalogue.ngettext(singular, plural, n) for n in range(200)}
        assert seen == set(forms), key


def test_russian_plural_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_LANG", "ru")
    shown = {n: _n("cli.redrove_dead", n, topic="mail") for n in (1, 2, 5, 11, 21, 22, 25, 112)}
    assert shown[1] == "1 мёртвое задание темы mail запущено заново"
    assert shown[2] == "2 мёртвых задания темы mail запущены заново"
    assert shown[5] == "5 мёртвых заданий темы mail запущено заново"
    assert shown[11] == "11 мёртвых заданий темы mail запущено заново"
    assert shown[21] == "21 мёртвое задание темы mail запущено заново"
    assert shown[22].startswith("22 мёртвых задания ")
    assert shown[25].startswith("25 мёртвых заданий ")
    assert shown[112].startswith("112 мёртвых заданий ")
    monkeypatch.setenv("BROOQ_LANG", "en")
    assert _n("cli.redrove_dead", 1, topic="mail") == "re-drove 1 dead job of topic mail"
    assert _n("cli.redrove_dead", 21, topic="mail") == "re-drove 21 dead jobs of topic mail"


def test_the_cli_speaks_russian_tables_plurals_and_help(db: str) -> None:
    ru = {**ENGLISH_LOCALE, "BROOQ_LANG": "ru"}
    declare(db)
    stats = brooq("stats", dsn=db, env=ru)
    assert stats.returncode == 0, stats.stderr
    assert stats.stdout.splitlines()[0].split("  ")[:2] == ["тема", "пауза"]
    assert stats.stdout.splitlines()[2].split()[:2] == ["mail", "нет"]
    english = brooq("stats", dsn=db, env=ENGLISH_LOCALE)
    assert english.stdout.splitlines()[0].split()[:3] == ["topic", "paused", "pending"]
    assert english.stdout.splitlines()[2].split()[:2] == ["mail", "no"]
    for n, line in ((1, "удалено 1 задание в очереди (pending, failed) темы t1"),
                    (2, "удалено 2 задания в очереди (pending, failed) темы t2"),
                    (5, "удалено 5 заданий в очереди (pending, failed) темы t5"),
                    (21, "удалено 21 задание в очереди (pending, failed) темы t21")):
        declare(db, f"t{n}")
        enqueue(db, f"t{n}", n)
        done = brooq("flush", f"t{n}", "--yes", dsn=db, env=ru)
        assert done.returncode == 0, done.stderr
        assert done.stdout == line + "\n"
    enqueue(db, "t1", 1)
    assert brooq("flush", "t1", "--yes", dsn=db, env=ENGLISH_LOCALE).stdout == \
        "flushed 1 queued (pending, failed) job of topic t1\n"
    enqueue(db, "t2", 2)
    assert brooq("flush", "t2", "--yes", dsn=db, env=ENGLISH_LOCALE).stdout == \
        "flushed 2 queued (pending, failed) jobs of topic t2\n"
    helped = brooq("enqueue", "--help", env=ru)
    assert helped.returncode == 0
    assert "поставить в очередь одно задание" not in helped.stdout  # the command's own help
    assert "ключ идемпотентности: одно задание на (тема, ключ)" in helped.stdout
    assert "база данных (по умолчанию: $BROOQ_DSN)" in helped.stdout
    top = brooq("--help", env=ru).stdout
    assert "brooq: очередь заданий в PostgreSQL." in top
    assert "поставить в очередь одно задание" in top
    assert "idempotency key: one job per (topic, key)" in brooq("enqueue", "--help",
                                                                env=ENGLISH_LOCALE).stdout
    bare = brooq(env=ru)
    assert bare.returncode == 2
    assert "команды:" in bare.stderr and "глубина и отставание по темам" in bare.stderr
    bad = brooq("enqueue", "mail", "{nope", dsn=db, env=ru)
    assert bad.returncode == 1
    assert bad.stderr.startswith("brooq: ошибка: данные задания — не корректный JSON: ")


# --- no user-facing text inline in the CLI modules -----------------------------------

TRANSLATED_MODULES = ["cli.py", "text.py", "deploy.py", "processes.py", "progress.py", "demo.py", "declare.py",
                      "dashboard.py", "dashboard_html.py"]
WRITERS = {"write", "print", "debug", "info", "warning", "error"}  # out.write(), print(), log.info()
RAISED = {"Failure", "UsageError", "ArgumentTypeError", "DeployError"}
TEXT_KEYWORDS = {"help", "description"}


def literal_text(node: ast.expr) -> bool:
    """A string literal (or f-string, or "a" + ...) with words in it: inline text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(re.search(r"[A-Za-z]{2}", node.value))
    if isinstance(node, ast.JoinedStr):
        return any(literal_text(v) for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp):
        return literal_text(node.left) or literal_text(node.right)
    if isinstance(node, ast.IfExp):
        return literal_text(node.body) or literal_text(node.orelse)
    return False


def inline_texts(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = (node.func.attr if isinstance(node.func, ast.Attribute)
                else node.func.id if isinstance(node.func, ast.Name) else "")
        if name in WRITERS | RAISED:
            found += [f"{path.name}:{a.lineno}" for a in node.args if literal_text(a)]
        found += [f"{path.name}:{k.value.lineno} {k.arg}=" for k in node.keywords
                  if k.arg in TEXT_KEYWORDS and literal_text(k.value)]
    return found


@pytest.mark.parametrize("module", TRANSLATED_MODULES)
def test_no_user_facing_text_is_inline(module: str) -> None:
    """What a command prints, raises for the user, or shows in --help comes from _()."""
    path = Path(messages.__file__).parent / "tools" / module
    assert inline_texts(path) == []


def test_the_inline_text_scan_finds_inline_text(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('out.write(f"deleted {n} jobs\\n")\nraise Failure("no such thing")\n'
                      'p.add_argument("--x", help="an option")\nout.write(_("cli.ok") + "\\n")\n')
    assert inline_texts(sample) == ["sample.py:1", "sample.py:2", "sample.py:3 help="]


def test_there_is_a_russian_catalogue() -> None:
    assert [p.parts[-3] for p in messages.catalogues()] == ["ru"]


def test_the_dashboard_pages_follow_brooq_lang_and_stay_escaped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from brooq.tools import dashboard_html as html

    view = html.View(admin=False, csrf="", can_log_in=True, path="/", here="/")
    monkeypatch.setenv("BROOQ_LANG", "ru")
    empty = html.topics(view, [], {})
    assert '<html lang="ru">' in empty and ">Темы</a>" in empty
    assert ("Тем пока нет: обработчик объявляет свои темы при запуске, или выполните "
            "<code>brooq declare-topic NAME</code>.") in empty
    shown = html.message(view, "<b>x</b>", "<script>alert(1)</script> & co")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in shown and "<script>" not in shown
    assert "назад к темам" in shown
    monkeypatch.setenv("BROOQ_LANG", "en")
    empty = html.topics(view, [], {})
    assert '<html lang="en">' in empty and ">Topics</a>" in empty and ">Dead &amp; failed</a>" in empty
    assert "<code>brooq declare-topic NAME</code>" in empty


def plant_catalogue(root: Path) -> Path:
    """A brooq catalogue at ROOT/x/LC_MESSAGES/brooq.mo that says PLANTED; the dir x."""
    where = root / "x" / "LC_MESSAGES"
    where.mkdir(parents=True)
    header = "Content-Type: text/plain; charset=UTF-8\n"
    (where / "brooq.mo").write_bytes(messages.compile_mo({"": header, "cli.no_dsn": "PLANTED"}))
    return root / "x"


@pytest.mark.parametrize("variable", ["BROOQ_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"])
def test_a_language_is_never_a_path(variable: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    planted = plant_catalogue(tmp_path)
    assert gettext.translation("brooq", "/nowhere", languages=[str(planted)]).gettext(
        "cli.no_dsn") == "PLANTED"  # what gettext does with a path for a language
    relative = os.path.relpath(planted, messages.LOCALEDIR)  # ../../../tmp/.../x
    for value in (str(planted), relative, f"ru:{planted}", f"{planted}:xx", f"./{relative}"):
        for v in ("BROOQ_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
            monkeypatch.delenv(v, raising=False)
        monkeypatch.setenv(variable, value)
        assert "PLANTED" not in _("cli.no_dsn"), value
    # the command too, in a process of its own: English, never the planted catalogue
    env = {**ENGLISH_LOCALE, variable: str(planted)}
    done = brooq("stats", env=env)
    assert "PLANTED" not in done.stderr and "no database" in done.stderr, done.stderr


@pytest.mark.parametrize("tag", ["ru", "ru_RU", "ru_RU.UTF-8", "ru_RU.utf8@latin", "pt-BR"])
def test_language_tags_still_choose_their_catalogue(tag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert messages.is_language_tag(tag)
    monkeypatch.setenv("BROOQ_LANG", tag)
    if tag.startswith("ru"):
        assert _("cli.no_dsn") != ENGLISH["cli.no_dsn"]
    for bad in ("/tmp/x", "../x", "..", ".hidden", "ru/../x", "ru ru", ""):
        assert not messages.is_language_tag(bad), bad


# Texts whose {count} is never 1: a demo deploys 60+ changes, enqueues 20 jobs or more and
# 5 with priority. And a label, not a noun: "(+1 prefetched)".
COUNT_NEVER_ONE = {"demo.deployed_sqitch", "demo.fate_title", "demo.priority", "progress.prefetched"}


def test_a_count_before_a_noun_is_a_plural_text() -> None:
    """"1 jobs in flight", "reaped 1 jobs": a {count} followed by its noun goes through _n,
    and its English singular is not its plural."""
    plain = sorted(k for k, text in ENGLISH.items()
                   if re.search(r"\{count\} [a-z]", text) and k not in COUNT_NEVER_ONE)
    assert plain == []
    assert sorted(k for k, (one, other) in PLURALS.items() if one == other) == []


def test_worker_counts_agree_in_english_and_russian(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_LANG", "en")
    assert _n("worker.reaped", 1, worker="w1") == "worker w1: reaped 1 job whose lease expired"
    assert _n("worker.stopping", 1, worker="w1", grace="30s") == \
        "worker w1: stopping; 1 job in flight, waiting up to 30s"
    assert _n("worker.stopping", 0, worker="w1", grace="30s") == \
        "worker w1: stopping; 0 jobs in flight, waiting up to 30s"
    monkeypatch.setenv("BROOQ_LANG", "ru")
    assert _n("worker.reaped", 21, worker="w1") == \
        "обработчик w1: 21 задание с истёкшей арендой возвращено в очередь"
    assert _n("worker.stopping", 3, worker="w1", grace="30s") == \
        "обработчик w1: остановка; в работе 3 задания, ожидание до 30s"
    assert _n("worker.stopping", 11, worker="w1", grace="30s") == \
        "обработчик w1: остановка; в работе 11 заданий, ожидание до 30s"
