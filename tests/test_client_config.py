"""Worker configuration: BROOQ_* variables, durations with units, every problem at once."""

from __future__ import annotations

import dataclasses

from datetime import timedelta

import brooq
import pytest
from brooq.config import WorkerConfig, parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30), ("500ms", 0.5), ("2m", 120), ("1h", 3600), ("1d", 86400), ("1m30s", 90),
    ("1.5s", 1.5), (" 10S ", 10),
])
def test_durations_need_units(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["30", "", "s", "10 parsecs", "-1s", "1s2"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_a_bare_number_says_it_needs_a_unit() -> None:
    with pytest.raises(ValueError, match="needs a unit"):
        parse_duration("30")


def test_settings_from_the_environment_and_arguments_win() -> None:
    env = {"BROOQ_DSN": "postgresql://u@h/db", "BROOQ_CONCURRENCY": "7", "BROOQ_LEASE": "45s",
           "BROOQ_POLL_INTERVAL": "250ms", "BROOQ_REAP_INTERVAL": "10s",
           "BROOQ_SHUTDOWN_GRACE": "1m", "BROOQ_HUNG_GRACE": "5s",
           "BROOQ_METRICS_ADDRESS": "127.0.0.1:9464", "BROOQ_WORKER_NAME": "w1"}
    config = WorkerConfig.from_env(env, concurrency=3)
    assert config == WorkerConfig(dsn="postgresql://u@h/db", concurrency=3, lease=timedelta(seconds=45),
                                  poll_interval=timedelta(milliseconds=250),
                                  reap_interval=timedelta(seconds=10),
                                  shutdown_grace=timedelta(minutes=1), hung_grace=timedelta(seconds=5),
                                  metrics_address="127.0.0.1:9464", name="w1")
    defaults = WorkerConfig.from_env({"BROOQ_DSN": "dbname=x"})
    assert defaults.effective_reap_interval == timedelta(seconds=15)
    assert defaults.lease == timedelta(seconds=30)  # a heartbeat every lease/3 (brooq.leases)


def test_an_empty_variable_counts_as_unset() -> None:
    """BROOQ_X= (set, empty: as a template or a compose file leaves it) is not a value."""
    empty = {f"BROOQ_{f.name.upper()}": "" for f in dataclasses.fields(WorkerConfig)}
    config = WorkerConfig.from_env({**empty, "BROOQ_DSN": "dbname=x", "BROOQ_WORKER_NAME": "",
                                    "BROOQ_NAME": "legacy"})
    assert config == WorkerConfig(dsn="dbname=x", name="legacy")  # every default, no error
    with pytest.raises(brooq.ConfigError) as raised:
        WorkerConfig.from_env(empty)
    assert raised.value.problems == ["dsn: missing; pass dsn= or set BROOQ_DSN"]


def test_an_empty_variable_leaves_a_worker_its_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_DSN", "dbname=x")
    for name in ("BROOQ_CONCURRENCY", "BROOQ_LEASE", "BROOQ_METRICS_ADDRESS", "BROOQ_LISTEN"):
        monkeypatch.setenv(name, "")
    worker = brooq.Worker(prefetch=2)
    assert (worker.config.concurrency, worker.config.lease, worker.config.metrics_address,
            worker.config.listen, worker.config.prefetch) == (10, timedelta(seconds=30), None, True, 2)


def test_every_problem_is_listed_at_once() -> None:
    env = {"BROOQ_CONCURRENCY": "ten", "BROOQ_LEASE": "30", "BROOQ_POLL_INTERVAL": "0s",
           "BROOQ_SHUTDOWN_GRACE": "soon", "BROOQ_METRICS_ADDRESS": "nowhere"}
    with pytest.raises(brooq.ConfigError) as raised:
        WorkerConfig.from_env(env)
    problems = raised.value.problems
    text = "\n".join(problems)
    for expected in ("BROOQ_CONCURRENCY='ten'", "BROOQ_LEASE='30'", "needs a unit",
                     "BROOQ_SHUTDOWN_GRACE='soon'", "dsn: missing", "poll_interval",
                     "metrics_address"):
        assert expected in text
    assert len(problems) == 6
    assert str(len(problems)) in str(raised.value)


def test_a_lease_heartbeats_cannot_keep_is_refused() -> None:
    with pytest.raises(brooq.ConfigError) as raised:
        brooq.Worker("dbname=x", lease=timedelta(milliseconds=500), concurrency=0,
                     reap_interval=timedelta(milliseconds=10), hung_grace=timedelta(0))
    text = "\n".join(raised.value.problems)
    assert "lease: 500ms is too short" in text
    assert "concurrency" in text and "reap_interval" in text and "hung_grace" in text


def test_reaping_far_less_often_than_the_lease_is_refused() -> None:
    with pytest.raises(brooq.ConfigError, match="more than 10 leases"):
        WorkerConfig(dsn="dbname=x", lease=timedelta(seconds=1),
                     reap_interval=timedelta(seconds=30)).validate()


def test_worker_arguments_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_DSN", "dbname=from_env")
    monkeypatch.setenv("BROOQ_CONCURRENCY", "3")
    monkeypatch.setenv("BROOQ_NAME", "legacy-name")
    worker = brooq.Worker(concurrency=5)
    assert worker.config.dsn == "dbname=from_env"
    assert worker.config.concurrency == 5
    assert worker.name == "legacy-name"
    monkeypatch.delenv("BROOQ_NAME")
    worker = brooq.Worker.from_config(WorkerConfig(dsn="dbname=x"))
    host_pid_random = worker.name.split(":")
    assert len(host_pid_random) == 3 and host_pid_random[1].isdigit()


def test_a_worker_without_handlers_does_not_start() -> None:
    worker = brooq.Worker("dbname=x")
    with pytest.raises(brooq.ConfigError, match="no handlers"):
        worker.run()


def test_the_guide_lists_every_setting_as_workerconfig_declares_it() -> None:
    from pathlib import Path

    from brooq import config

    guide = (Path(__file__).resolve().parent.parent / "docs" / "python-guide.md").read_text()
    rows = [line for line in guide.splitlines() if line.startswith("| `")]
    table = {cells[0].strip("`"): cells for line in rows
             if len(cells := [c.strip() for c in line.strip("|").split("|")]) == 5}
    assert list(table) == [f.name for f in config.SETTINGS]
    for f in config.SETTINGS:
        argument, variable, option, default, meaning = table[f.name]
        assert variable == f"`{f.variable}`"
        assert option == f"`{f.option}`"
        assert (default, meaning) == (f.shown_default, f.doc)


def test_a_worker_loads_no_openssl_for_its_name() -> None:
    """The default name's random part comes from os.urandom: `secrets` would import
    hashlib, which loads OpenSSL's libcrypto (0.7 MiB of a worker's memory) for 3 bytes."""
    from helpers import run_fresh

    code = ("import sys, brooq; name = brooq.WorkerConfig(dsn='x').name or "
            "brooq.config.default_worker_name(); "
            "print(name.rsplit(':', 1)[1], sorted({'hashlib', '_hashlib', 'secrets'} & set(sys.modules)))")
    out = run_fresh(code).split(maxsplit=1)
    assert len(out[0]) == 6 and int(out[0], 16) >= 0  # 3 random bytes in hex
    assert out[1].strip() == "[]"
