"""One mechanism, two declarations (brooq.declared): every field of brooq.WorkerConfig and
brooq.TopicSettings is one setting, declared once, and what takes a setting derives from
that declaration alone: the options of `brooq worker`, `brooq declare-topic` and
`brooq alter-topic` and of `manage.py brooq_worker`, the BROOQ_* variables, Django's
BROOQ dict, the keyword arguments of Worker.handler, declare_topic and alter_topic, and
a worker's refusal of a value out of bounds. No database: these run in a second."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import timedelta
from typing import Any

import brooq
import pytest
from brooq import aio, calls, config, declared, settings
from brooq.config import WorkerConfig
from brooq.declared import Setting
from brooq.settings import HandlerSettings, TopicSettings
from brooq.tools.cli import build_parser

SAMPLES: dict[type, tuple[str, Any]] = {  # a text of each type and the value it parses to
    int: ("7", 7), timedelta: ("1m30s", timedelta(seconds=90)), bool: ("off", False), str: ("x", "x")}


def subcommand(name: str) -> Any:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    return commands[name]


def options(name: str) -> dict[str, Any]:
    """The actions of a brooq subcommand, by option string."""
    return {o: a for a in subcommand(name)._actions for o in a.option_strings}


@pytest.mark.parametrize("cls", [WorkerConfig, TopicSettings], ids=lambda c: c.__name__)
def test_every_field_is_declared_once_as_a_setting(cls: type) -> None:
    """A field added without brooq.declared.setting (no doc, no bounds, no parser) fails here."""
    names = [f.name for f in dataclasses.fields(cls)]
    declared_ = declared.settings_of(cls)
    assert [s.name for s in declared_] == names
    assert len(set(names)) == len(names)
    for s in declared_:
        assert s.doc and s.doc == s.doc.strip() and "\n" not in s.doc, s.name
        assert s.kind in declared.PARSERS, s.name
        assert s.default == next(f.default for f in dataclasses.fields(cls) if f.name == s.name)
    assert config.SETTINGS == declared.settings_of(WorkerConfig)
    assert settings.SETTINGS == declared.settings_of(TopicSettings)
    assert config.NAMES == tuple(f.name for f in dataclasses.fields(WorkerConfig))
    assert settings.NAMES == tuple(f.name for f in dataclasses.fields(TopicSettings))


def test_the_subclasses_add_their_own_argument_and_declare_no_setting_twice() -> None:
    """Worker.handler's timeout and alter_topic's clear are no topic setting."""
    assert declared.settings_of(HandlerSettings) == settings.SETTINGS
    assert declared.settings_of(calls.TopicChanges) == settings.SETTINGS


@pytest.mark.parametrize("s", config.SETTINGS, ids=config.NAMES)
def test_a_worker_setting_is_one_option_and_one_variable_read_alike(s: Setting) -> None:
    """`brooq worker --x` and BROOQ_X parse a text alike, through the declaration's
    parser; the option's help shows the declaration's doc, default and variable."""
    if s.name == "dsn":
        assert "--dsn" in options("worker")  # the shared --dsn of every command
        return
    action = options("worker")[s.option]
    assert action.dest == s.name and action.metavar == s.name.upper()
    assert s.doc in action.help and s.shown_default in action.help and s.variable in action.help
    text, value = {"metrics_address": ("127.0.0.1:9464",) * 2,
                   "listen_dsn": ("dbname=y",) * 2}.get(s.name, SAMPLES[s.kind])
    assert action.type(text) == s.parse(text) == value
    if s.name == "metrics_address" and not brooq.nometrics.available():
        return
    made = WorkerConfig.from_env({"BROOQ_DSN": "dbname=x", s.variable: text})
    assert getattr(made, s.name) == value


def test_every_worker_setting_is_an_option_of_brooq_worker() -> None:
    dests = {a.dest for a in subcommand("worker")._actions}
    assert set(config.NAMES) <= dests
    for s in config.SETTINGS:
        assert options("worker")[s.option].dest == s.name


def test_the_django_command_takes_every_worker_setting() -> None:
    pytest.importorskip("django")
    import argparse

    from brooq.contrib.django.management.commands.brooq_worker import Command

    parser = argparse.ArgumentParser()
    Command().add_arguments(parser)
    taken = {o: a for a in parser._actions for o in a.option_strings}
    for s in config.SETTINGS:
        if s.name != "dsn":
            assert taken[s.option].dest == s.name and s.doc in taken[s.option].help


def test_the_environment_is_read_through_each_declaration() -> None:
    env = {"BROOQ_DSN": "dbname=x", "BROOQ_CONCURRENCY": "3", "BROOQ_LEASE": "1m",
           "BROOQ_LISTEN": "false", "BROOQ_WORKER_NAME": "w"}
    made = WorkerConfig.from_env(env)
    assert (made.concurrency, made.lease, made.listen, made.name) == (3, timedelta(minutes=1), False, "w")
    with pytest.raises(brooq.ConfigError) as raised:
        WorkerConfig.from_env({"BROOQ_DSN": "dbname=x", "BROOQ_LISTEN": "maybe"})
    assert raised.value.problems == ["BROOQ_LISTEN='maybe': not a boolean (true or false)"]


BOUNDED = [s for s in config.SETTINGS if s.low is not None or s.high is not None]


@pytest.mark.parametrize("s", BOUNDED, ids=[s.name for s in BOUNDED])
def test_a_worker_refuses_exactly_what_its_declaration_bounds(s: Setting) -> None:
    """WorkerConfig.validate refuses a value out of the declared range, naming the setting,
    and takes each bound itself: the bounds live in the declaration, nowhere else."""
    step = 1 if s.kind is int else timedelta(microseconds=1)
    base = {"dsn": "dbname=x", "lease": timedelta(seconds=30)}
    for bound in (s.low, s.high):
        if bound is not None:
            WorkerConfig(**{**base, s.name: bound}).validate()
    for value in (s.low - step if s.low is not None else None, s.high + step if s.high is not None else None):
        if value is not None:
            with pytest.raises(brooq.ConfigError) as raised:
                WorkerConfig(**{**base, s.name: value}).validate()
            assert [p.split(":")[0] for p in raised.value.problems] == [s.name]


def test_a_value_of_the_wrong_type_is_refused_not_crashed_on() -> None:
    with pytest.raises(brooq.ConfigError) as raised:
        WorkerConfig(dsn="dbname=x", concurrency="ten", lease=30).validate()  # type: ignore[arg-type]
    assert raised.value.problems == [
        "concurrency: 'ten' is not an integer from 1 to 10000",
        "lease: 30 is not a duration (a timedelta, or text such as '30s')"]


def test_the_statement_timeout_is_derived_from_the_lease_once() -> None:
    assert WorkerConfig(lease=timedelta(seconds=30)).statement_timeout_ms == 15000
    assert WorkerConfig(lease=timedelta(seconds=1)).statement_timeout_ms == 1000
    worker = brooq.Worker("dbname=x", lease=timedelta(seconds=10))
    assert worker._watchdog.limit == 5 + 1.0
    assert worker._session.config.statement_timeout_ms == 5000


def keywords(fn: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY]


def test_every_function_that_takes_the_settings_shows_each_declared_one() -> None:
    """One signature-rewriting helper (brooq.declared.takes_settings) gives Worker.handler,
    declare_topic and alter_topic, in every face, the declaration's keywords."""
    topic = [(s.name, inspect.Parameter.KEYWORD_ONLY, s.default) for s in settings.SETTINGS]
    assert keywords(brooq.Worker.handler) == [
        *topic, ("timeout", inspect.Parameter.KEYWORD_ONLY, timedelta(minutes=1))]
    assert keywords(brooq.declare_topic) == keywords(aio.declare_topic) == topic
    assert keywords(brooq.alter_topic) == keywords(aio.alter_topic) == [
        *((n, k, None) for n, k, _ in topic), ("clear", inspect.Parameter.KEYWORD_ONLY, ())]
    assert list(inspect.signature(brooq.Worker.handler).parameters)[:2] == ["self", "topic"]


def test_the_helper_builds_the_settings_or_hands_over_the_names_given() -> None:
    got: list[Any] = []

    @declared.takes_settings(TopicSettings)
    def whole(name: str, given: TopicSettings) -> None:
        got.append((name, given))

    @declared.takes_settings(calls.TopicChanges, named=True)
    def named(name: str, given: dict[str, Any]) -> None:
        got.append((name, given))

    whole("a", max_attempts=3)
    named("b", max_lease=timedelta(minutes=2))
    assert got == [("a", TopicSettings(max_attempts=3)), ("b", {"max_lease": timedelta(minutes=2)})]
    with pytest.raises(TypeError):
        whole("a", max_sparkle=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        named("b", max_sparkle=1)  # type: ignore[call-arg]


def test_the_handler_checks_the_lease_against_the_max_lease_it_declares() -> None:
    """The pre-check of Worker.handler compares with the very max_lease the worker declares
    (the database's claim stays the contract)."""
    worker = brooq.Worker("dbname=x", lease=timedelta(hours=2))
    with pytest.raises(brooq.ConfigError, match="longer than the topic's max_lease 3600s"):
        worker.handler("t")(lambda job: None)
    worker.handler("t", max_lease=timedelta(hours=2))(lambda job: None)
    assert worker._handlers["t"].settings.max_lease == timedelta(hours=2)


def test_the_sql_api_page_lists_every_topic_setting_of_declare_topic() -> None:
    """docs/sql-api.md's table of declare_topic's parameters: the name, then exactly the
    settings TopicSettings declares (rate and per share a row). The python guide's table
    of the worker's settings is held by tests/test_client_config.py."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "sql-api.md").read_text()
    table = page[page.index("| parameter | meaning | allowed |"):]
    table = table[:table.index("\n\n")]
    listed = [name for line in table.splitlines()[2:]
              for name in re.findall(r"`(\w+)`", line.split("|")[1])]
    assert listed[0] == "name"
    assert sorted(listed[1:]) == sorted(settings.NAMES)
