"""User-facing texts come from a gettext catalogue by key (docs/python-guide.md, "Language")."""

from __future__ import annotations

import gettext
import string

import pytest
from brooq import messages
from brooq.messages import ENGLISH, _
from test_cli import brooq, declare

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


@pytest.mark.parametrize("po", messages.catalogues(), ids=lambda p: p.parts[-3])
def test_every_catalogue_has_every_key_with_the_same_fields(po: object) -> None:
    translated = messages.read_po(po)  # type: ignore[arg-type]
    translated.pop("", None)  # the header
    assert set(translated) == set(ENGLISH)
    for key, text in ENGLISH.items():
        assert translated[key], key
        assert fields(translated[key]) == fields(text), key


@pytest.mark.parametrize("po", messages.catalogues(), ids=lambda p: p.parts[-3])
def test_the_committed_mo_is_compiled_from_the_po(po: object) -> None:
    """python -m brooq.messages rebuilds it; gettext reads what compile_mo writes."""
    mo = po.with_suffix(".mo")  # type: ignore[attr-defined]
    assert mo.read_bytes() == messages.compile_mo(messages.read_po(po))  # type: ignore[arg-type]
    with mo.open("rb") as f:
        catalogue = gettext.GNUTranslations(f)
    for key, text in messages.read_po(po).items():  # type: ignore[arg-type]
        if key:
            assert catalogue.gettext(key) == text


def test_there_is_a_russian_catalogue() -> None:
    assert [p.parts[-3] for p in messages.catalogues()] == ["ru"]
