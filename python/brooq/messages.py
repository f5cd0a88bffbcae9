"""User-facing texts by symbolic key, from a gettext catalogue (docs/python-guide.md, "Language").

ENGLISH is the source of truth: each key's English text with its `str.format` fields.
Other languages are gettext catalogues, `locale/<lang>/LC_MESSAGES/brooq.po`, whose msgid
is the key and msgstr the translation; the compiled `.mo` next to each is committed
(`python -m brooq.messages` rebuilds them, pure Python, no msgfmt needed). The language:
BROOQ_LANG if set, else the locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG, as gettext reads
them); a language without a catalogue, or a key missing from it, gives the English text.
SQL error texts (from PostgreSQL) stay English.
"""

from __future__ import annotations

import ast
import gettext
import os
import struct
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

DOMAIN = "brooq"
LOCALEDIR = Path(__file__).with_name("locale")

ENGLISH: dict[str, str] = {
    # the worker's log messages (worker.py and its rooms)
    "worker.started": "worker {worker}: topics {topics}, concurrency {concurrency}, lease {lease}",
    "worker.metrics": "worker {worker}: metrics on {url}/metrics",
    "worker.stopped": "worker {worker}: stopped, every job settled",
    "worker.fatal": "worker {worker}: {error}",
    "worker.loop_error": "worker {worker}: unexpected error in the loop",
    "worker.reconnected": "worker {worker}: reconnected to the database after {seconds:.1f}s",
    "worker.connected": "worker {worker}: package {version}, schema {schema}",
    "worker.topic_settings_kept": "worker {worker}: topic {topic}: using the settings in the "
                                  "database (declaring them needs brooq_admin)",
    "worker.connection_lost": "worker {worker}: lost the database connection ({reason}); "
                              "reconnecting with backoff (up to {max_delay:.0f}s between tries), "
                              "handlers keep running",
    "worker.still_disconnected": "worker {worker}: still no database connection after "
                                 "{seconds:.0f}s ({reason})",
    "worker.reconnect_failed": "worker {worker}: reconnect failed ({reason}); retrying in {delay:.1f}s",
    "worker.reaped": "worker {worker}: reaped {count} jobs whose lease expired",
    "worker.stopping": "worker {worker}: stopping; {count} jobs in flight, waiting up to {grace}",
    "worker.handing_back": "worker {worker}: handing back {count} prefetched jobs that never started",
    "worker.unsettled_at_exit": "worker {worker}: could not settle {count} finished jobs before "
                                "exit: {error}",
    "worker.handlers_left_running": "worker {worker}: stopping with {count} handlers still "
                                    "running; their leases will expire and the jobs return to "
                                    "the queue",
    "worker.settle_many_failed": "worker {worker}: settle_many failed ({error}); settling one by one",
    "worker.settle_connection_lost": "worker {worker}: settling connection lost ({error}); "
                                     "reconnecting (try {failures})",
    "worker.listener_lost": "worker {worker}: listener connection lost ({error}); retrying in "
                            "{delay:.1f}s",
    "worker.watchdog_cut": "worker {worker}: no answer from the database for {seconds:.1f}s; "
                           "cutting the connection",
    "job.lease_lost": "job {id} ({topic}): lease lost (canceled or reaped); stopping its handler",
    "job.attempt_error": "job {id} ({topic}) attempt {attempt}/{max_attempts}: {error}",
    "job.attempt_failed": "job {id} ({topic}) attempt {attempt}/{max_attempts} failed: {error}",
    "job.attempt_stopped": "job {id} ({topic}) attempt {attempt}/{max_attempts} {error}",
    "job.hung_returned": "job {id} ({topic}): the hung handler returned after {seconds:.1f}s",
    "job.hung": "job {id} ({topic}): handler {handler} still running {seconds:.1f}s after it was "
                "told to stop ({reason}); it holds a slot until it returns",
    "job.cannot_settle_failed": "job {id}: cannot settle it as failed: {error}",
    "job.cannot_settle": "job {id}: cannot settle {outcome} ({error}); settling failed",
    "job.chain_refused": "job {id}: chained jobs refused ({error}); the attempt fails",
    "job.dead": "job {id} ({topic}) is dead after attempt {attempt}/{max_attempts}: {error}",
    # the CLI's top-level lines
    "cli.error": "brooq: error: {reason}",
    "cli.invalid_config": "brooq: error: invalid worker configuration: {problems}",
    "cli.interrupted": "brooq: interrupted",
    "cli.job_not_found": "job {id} not found (never enqueued, or purged)",
    "cli.no_jobs_match": "no jobs match",
    "cli.no_dsn": "no database given: pass --dsn postgresql://... or set BROOQ_DSN",
    "cli.cannot_connect": "cannot connect to the database: {reason}",
    "cli.invalid_dsn": "invalid DSN: {reason}",
    "cli.no_topics": "no topics yet: declare one with brooq declare-topic NAME",
    "cli.canceled": "canceled job {id}",
    "cli.not_canceled": "job {id} not canceled: already finished (done, dead, canceled) or unknown",
    "cli.redriven": "re-drove job {id}: pending again",
    "cli.not_redriven": "job {id} not re-driven: not dead or canceled (pending, failed, "
                        "processing, done), or unknown",
    "cli.nothing_flushed": "nothing flushed",
    "cli.no_schedules": "no schedules yet: brooq schedule NAME CRON TOPIC [JSON]",
    "cli.unscheduled": "unscheduled {name}",
    "cli.no_such_schedule": "no schedule named {name}",
    "cli.declared": "declared topic {topic}",
    "cli.paused": "paused topic {topic}",
    "cli.already_paused": "topic {topic} was already paused",
    "cli.resumed": "resumed topic {topic}",
    "cli.not_paused": "topic {topic} was not paused",
}


def language() -> str | None:
    """BROOQ_LANG if set (it wins), else None: gettext reads the locale variables."""
    return os.environ.get("BROOQ_LANG") or None


@lru_cache(maxsize=8)
def _catalogue(lang: str | None) -> gettext.NullTranslations:
    languages = [lang] if lang else None
    return gettext.translation(DOMAIN, LOCALEDIR, languages=languages, fallback=True)


def _(key: str, **fields: Any) -> str:
    """The text of `key` in the current language, its fields filled in."""
    text = _catalogue(language()).gettext(key)
    if text == key:  # no catalogue, or not in it: English
        text = ENGLISH[key]
    return text.format(**fields)


# --- a tiny msgfmt (the logic of CPython's Tools/i18n/msgfmt.py, for our simple .po files)

def read_po(path: Path) -> dict[str, str]:
    """msgid -> msgstr of a .po file (single and continued strings; no plurals, no contexts)."""
    messages: dict[str, str] = {}
    section, msgid, msgstr = None, "", ""
    for raw in path.read_text(encoding="utf-8").splitlines() + [""]:
        line = raw.strip()
        if line.startswith("msgid ") or not line:
            if section == "msgstr" and (msgid or msgstr):
                messages[msgid] = msgstr
            section = None
            if not line:
                continue
        if line.startswith("#"):
            continue
        if line.startswith("msgid "):
            section, msgid, msgstr = "msgid", ast.literal_eval(line[6:]), ""
        elif line.startswith("msgstr "):
            section, msgstr = "msgstr", ast.literal_eval(line[7:])
        elif line.startswith('"'):
            if section == "msgid":
                msgid += ast.literal_eval(line)
            else:
                msgstr += ast.literal_eval(line)
    return messages


def compile_mo(messages: dict[str, str]) -> bytes:
    """The GNU .mo bytes of a catalogue (as msgfmt writes them)."""
    keys = sorted(messages)
    ids = b"".join(k.encode() + b"\0" for k in keys)
    strs = b"".join(messages[k].encode() + b"\0" for k in keys)
    offsets, o1, o2 = [], 0, 0
    for k in keys:
        kb, vb = k.encode(), messages[k].encode()
        offsets.append((len(kb), o1, len(vb), o2))
        o1 += len(kb) + 1
        o2 += len(vb) + 1
    keystart = 7 * 4 + 16 * len(keys)
    valuestart = keystart + len(ids)
    table = []
    for klen, koff, vlen, voff in offsets:
        table.append((klen, keystart + koff))
    for klen, koff, vlen, voff in offsets:
        table.append((vlen, valuestart + voff))
    out = struct.pack("Iiiiiii", 0x950412DE, 0, len(keys), 7 * 4, 7 * 4 + len(keys) * 8, 0, 0)
    out += b"".join(struct.pack("ii", n, off) for n, off in table)
    return out + ids + strs


def catalogues() -> list[Path]:
    return sorted(LOCALEDIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def build() -> None:
    """Writes each .po file's .mo next to it."""
    for po in catalogues():
        po.with_suffix(".mo").write_bytes(compile_mo(read_po(po)))
        sys.stdout.write(f"{po.with_suffix('.mo')}\n")


if __name__ == "__main__":
    build()
