"""User-facing texts by symbolic key, from a gettext catalogue (docs/python-guide.md, "Language").

ENGLISH is the source of truth: each key's English text with its `str.format` fields;
PLURALS the texts with a count, (one, other) in English, a form per count in each catalogue
(msgid_plural, msgstr[i], the Plural-Forms header): `_n(key, count, ...)`.
Other languages are gettext catalogues, `locale/<lang>/LC_MESSAGES/brooq.po`, whose msgid
is the key and msgstr the translation; the compiled `.mo` next to each is committed
(`python -m brooq.messages` rebuilds them, pure Python, no msgfmt needed). The language:
BROOQ_LANG if set, else the locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG, as gettext reads
them), language tags only (ru, ru_RU.UTF-8: never a path); a language without a catalogue,
or a key missing from it, gives the English text.
SQL error texts (from PostgreSQL) stay English.
"""

from __future__ import annotations

import ast
import difflib
import gettext
import os
import re
import struct
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from brooq.settings import SETTINGS

DOMAIN = "brooq"
LOCALEDIR = Path(__file__).with_name("locale")

ENGLISH: dict[str, str] = {
    # the worker's log messages (worker.py and the modules below its loop)
    "worker.started": "worker {worker}: topics {topics}, concurrency {concurrency}, lease {lease}, "
                      "database {database}",
    "worker.metrics": "worker {worker}: metrics on {url}/metrics",
    "worker.stopped": "worker {worker}: stopped, every job settled",
    "worker.fatal": "worker {worker}: {error}",
    "worker.loop_error": "worker {worker}: unexpected error in the loop",
    "worker.reconnected": "worker {worker}: reconnected to the database after {seconds:.1f}s",
    "worker.connected": "worker {worker}: package {version}, schema {schema}",
    "worker.topic_settings_kept": "worker {worker}: topic {topic}: using the settings in the "
                                  "database (declaring them needs brooq_admin)",
    "worker.topic_created": "worker {worker}: created topic {topic}",
    "worker.topic_created_close": "worker {worker}: created topic {topic}, which did not exist, and "
                                  "topic {close} does (a typo? brooq drop-topic {topic} removes it)",
    "worker.topic_dropped": "worker {worker}: topic {topic} no longer exists (dropped while this worker "
                            "served it): stopped serving it, still serving {topics}",
    "worker.topic_missing": "topic {topic} does not exist, and this worker may not declare it (declaring "
                            "needs brooq_admin): an admin declares it with brooq declare-topic {topic}",
    "worker.tick_failed": "worker {worker}: schedule {schedule}: its tick {tick} enqueued nothing: {error}",
    "worker.tick_waited": "worker {worker}: ticking the schedules took too long ({error}); their ticks "
                          "stay owed, tried again at the next second",
    "worker.connection_lost": "worker {worker}: lost the database connection ({reason}); "
                              "reconnecting with backoff (up to {max_delay:.0f}s between tries), "
                              "handlers keep running",
    "worker.connected_after_wait": "worker {worker}: connected to the database after waiting {seconds:.1f}s",
    "worker.waiting_for_database": "worker {worker}: cannot connect to the database yet ({reason}); "
                                   "waiting for it up to {timeout} (start_timeout), retrying with "
                                   "backoff (up to {max_delay:.0f}s between tries)",
    "worker.still_disconnected": "worker {worker}: still no database connection after "
                                 "{seconds:.0f}s ({reason})",
    "worker.reconnect_failed": "worker {worker}: reconnect failed ({reason}); retrying in {delay:.1f}s",
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
    "cli.hint.did_you_mean": "did you mean {name}?",
    "cli.hint.declare_topic": "declare it with brooq declare-topic {topic} (brooq stats lists the topics)",
    "cli.hint.list_topics": "brooq stats lists the topics",
    "cli.hint.topic_in_use": "brooq drop-topic {topic} --force deletes its jobs and schedules with it; "
                             "or empty it first: brooq flush {topic} for the jobs not yet run, brooq "
                             "flush {topic} --completed for the finished ones, brooq unschedule NAME for "
                             "its schedules (jobs waiting for their parents go with --force only)",
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
    "cli.paused": "paused topic {topic}",
    "cli.already_paused": "topic {topic} was already paused",
    "cli.resumed": "resumed topic {topic}",
    "cli.not_paused": "topic {topic} was not paused",
    'cli.enqueued': 'id={id} created={created}',
    'cli.not_a_json_value': '{constant} is not a JSON value',
    'cli.bad_json': 'the payload is not valid JSON: {error} (in {text!r})',
    'cli.yes': 'yes',
    'cli.no': 'no',
    'cli.purged': 'purged',
    'cli.max_jobs_reached': 'stopped at --max-jobs {max_jobs}: run it again for the rest',
    'cli.retry_needs_one': "give a JOB_ID, or --dead TOPIC for a topic's dead jobs",
    'cli.retry_dead_options': '--canceled, --max-jobs and --since go with --dead TOPIC',
    'cli.schedule_list_alone': '--list takes no NAME, CRON, TOPIC or JSON',
    'cli.schedule_usage': "give NAME CRON TOPIC [JSON], e.g. brooq schedule nightly '0 3 * * *' report, or --list",
    'cli.scheduled': 'scheduled {name}: {cron!r} enqueues a job of topic {topic} each time (pg_cron job {jobid})',
    'cli.scheduled_workers': 'scheduled {name}: {cron!r} enqueues a job of topic {topic} each time, ticked by the running workers',
    'cli.schedule_error': '{name}: its last tick enqueued nothing: {error}',
    'cli.dropped_topic': 'dropped topic {topic}',
    'cli.declared_settings': 'declared topic {topic}: {settings}',
    'cli.altered_settings': 'altered topic {topic}: {settings}',
    'cli.alter_nothing': 'name at least one setting to change, e.g. brooq alter-topic NAME --rate 5',
    'cli.no_such_topic': 'topic {topic} does not exist',
    'cli.topic_heading': 'topic {topic}: paused {paused}, declared {created}, last changed {updated}',
    'cli.paused_mark': ' (paused)',
    'cli.deploy_adopted': "recorded schema {version} (installed without sqitch) in sqitch's registry",
    'cli.deploy_up_to_date': 'nothing to deploy: the schema is up to date (sqitch)',
    'cli.deployed_psql': 'deployed sql/install.sql with psql',
    'cli.invalid_worker': 'invalid worker {spec!r}: use MODULE:OBJECT, e.g. myapp.jobs:worker',
    'cli.cannot_import': 'cannot import {module!r}: {error}',
    'cli.no_attribute': 'module {module!r} has no {attr!r}',
    'cli.call_failed': 'calling {spec}() failed: {error}',
    'cli.not_a_worker': '{spec} is a {type}, not a brooq.Worker (OBJECT is a brooq.Worker or a callable returning one)',
    'cli.token_file': 'cannot read the token file {path}: {error}',
    'cli.dashboard_needs': 'brooq dashboard needs Starlette and Uvicorn: {hint}',
    'cli.bad_address': '--address: {error}',
    'cli.not_loopback': '--address: {host} is not a loopback address; pass --public to serve the dashboard there anyway (behind TLS: docs/dashboard.md)',
    'cli.bad_allowed_host': '--allowed-host: {error}',
    'cli.cannot_listen': 'cannot listen on {address}: {error}',
    'cli.invalid_number': 'invalid number {text!r}',
    'cli.at_least_1': '{text} must be at least 1',
    'cli.too_few_demo_jobs': '{text} is too few: the demo needs 20 jobs or more',
    'cli.more_than_10000': '{text} is more than 10000',
    'cli.invalid_job_id': 'invalid job id {text!r}: a job id is a number',
    'cli.invalid_time': 'invalid time {text!r}: use ISO 8601 with a zone, e.g. 2030-01-01T12:00:00+00:00',
    'cli.time_without_zone': 'invalid time {text!r}: give a time zone, e.g. +00:00 or Z',
    'cli.usage_line': 'usage: brooq COMMAND [options]   (brooq COMMAND --help for its options)',
    'cli.commands': 'commands:',
    'cli.dsn_note': 'Every command that talks to a database takes --dsn (default: $BROOQ_DSN).',
    'col.id': 'id',
    'col.topic': 'topic',
    'col.setting': 'setting',
    'col.value': 'value',
    'col.default': 'default',
    'col.state': 'state',
    'col.attempts': 'attempts',
    'col.updated': 'updated',
    'col.last_error': 'last_error',
    'col.paused': 'paused',
    'col.pending': 'pending',
    'col.failed': 'failed',
    'col.ready': 'ready',
    'col.scheduled': 'scheduled',
    'col.processing': 'processing',
    'col.expired': 'expired',
    'col.oldest_ready': 'oldest ready',
    'col.held': 'held',
    'col.name': 'name',
    'col.cron': 'cron',
    'col.payload': 'payload',
    'col.priority': 'priority',
    'col.last_tick': 'last tick',
    'col.last_job': 'last job',
    'col.ticker': 'ticker',
    'col.next_tick': 'next tick',
    'col.check': 'check',
    'col.status': 'status',
    'col.detail': 'detail',
    'help.description': 'brooq: a job queue in PostgreSQL.',
    'help.dsn': 'the database (default: $BROOQ_DSN)',
    'help.worker': 'run a worker: brooq worker MODULE:OBJECT',
    'help.worker.object': 'a brooq.Worker, or a callable returning one (e.g. myapp.jobs:worker)',
    'help.worker.setting': '{doc} (default: {default}; ${variable})',
    'help.worker.partition': 'work on this brooq partition (repeat for each; see docs/scale-out.md): one worker per partition, each with the settings given; --dsn is then unused',
    'help.worker.processes': 'run N worker processes under this one (one core each; SIGTERM stops them all gracefully, one that dies is restarted; default 1)',
    'help.progress': 'live line in a terminal, log lines in a pipe (auto), or off',
    'help.worker.log_level': "the worker's log messages on stderr (default INFO; failed attempts and dead jobs are ERROR, with the stack)",
    'help.enqueue': 'enqueue one job',
    'help.enqueue.payload': 'the payload, e.g. \'{{"to": "ann@example.com"}}\'; - reads it from stdin',
    'help.enqueue.key': 'idempotency key: one job per (topic, key)',
    'help.enqueue.delay': 'not before now + delay, e.g. 5s',
    'help.enqueue.at': 'not before this instant (ISO 8601 with zone)',
    'help.enqueue.priority': 'higher is claimed first (default 0)',
    'help.json': 'print JSON for scripts (instants ISO 8601, durations in seconds)',
    'help.job': "a job's fate, on one line",
    'help.jobs': 'list jobs, newest first: brooq jobs --state dead --topic email',
    'help.jobs.topic': 'only this topic (repeat for several)',
    'help.jobs.state': 'only this state (repeat for several)',
    'help.jobs.limit': 'at most this many (default 50)',
    'help.stats': 'depth and lag by topic',
    'help.schedule': 'a periodic job, ticked by pg_cron or the workers: brooq schedule NAME CRON TOPIC [JSON] | --list',
    'help.schedule.name': '1 to 48 of a-z 0-9 . - _',
    'help.schedule.cron': "a cron schedule in UTC, e.g. '0 3 * * *', '*/10 * * * * *' (the second first: the workers only) or '30 seconds'",
    'help.schedule.ticker': 'who ticks it (default: pg_cron where it is installed and can run the schedule, else the running workers)',
    'help.schedule.topic': 'a declared topic',
    'help.schedule.payload': 'the payload of every job (default {{}}); - reads stdin',
    'help.schedule.priority': 'the priority of every job (default 0)',
    'help.schedule.list': 'list the schedules and the last job of each',
    'help.unschedule': 'remove a periodic job',
    'help.drop_topic': 'remove a topic (refused while it has jobs or schedules, unless --force)',
    'help.drop_topic.force': 'delete its jobs and remove its schedules with it',
    'help.health': 'what needs a person: vacuum, expired leases, paused topics (exit 3 warn, 4 fail)',
    'help.cancel': 'cancel a job that is not finished',
    'help.retry': 're-drive a dead or canceled job: brooq retry JOB_ID | --dead TOPIC',
    'help.retry.id': 'a dead or canceled job',
    'help.retry.dead': "the topic's dead jobs instead, oldest first",
    'help.retry.canceled': 'with --dead: its canceled jobs too',
    'help.retry.max_jobs': 'with --dead: at most N jobs (default 1000, at most 100000)',
    'help.retry.since': 'with --dead: only jobs that died (or were canceled) at or after TIME (ISO 8601)',
    'help.retry.rearm_children': "workflows: the children each job's end canceled wait for it again",
    'help.flush': "delete a topic's queued jobs (pending, failed), or --completed ones",
    'help.flush.completed': 'the finished jobs instead (done, dead, canceled), without waiting for retention',
    'help.flush.yes': 'do not ask (needed when stdin is not a terminal)',
    'help.declare_topic': 'create a topic or set all its settings',
    'help.declare_topic.description': 'Create a topic or set all its settings, and print the topic as stored. A declaration is the whole truth: a setting not given takes its default (shown below), not the value it had. To change only some settings, use brooq alter-topic.',
    'help.topic.setting': '{doc} (default {default})',
    'help.topic.setting_or_none': '{doc}; none: no limit (default {default})',
    'help.alter_topic': 'change only the settings given of a topic',
    'help.alter_topic.setting_or_none': '{doc}; none: back to no limit',
    'help.topic': "a topic's settings, as stored",
    'help.pause': "stop claims of a topic's jobs",
    'help.resume': 'claim a paused topic again',
    'help.deploy': 'apply the schema (sqitch, else psql)',
    'help.deploy.method': 'sqitch deploy --verify, psql -f sql/install.sql, or auto (sqitch if present)',
    'help.deploy.root': 'the brooq source tree (default: found from the package)',
    'help.deploy.verbose': "print the tool's output",
    'help.django.worker': "run brooq's worker: the handlers of brooq.contrib.django.handler, "
                          "on the database and the settings of settings.BROOQ (docs/django.md)",
    'help.django.deploy': "deploy brooq's schema into Django's database, as brooq deploy does",
    'help.django.database': "the database alias (default: settings.BROOQ['DATABASE'], else default)",
    'help.django.declare': "make the database hold the topics of the project's handlers and tasks, "
                           "with their settings, and its schedules (run it after migrate)",
    'django.topic_created': 'created topic {topic}',
    'django.topic_declared': 'declared topic {topic} (it existed: its settings set again)',
    'django.no_handlers': "no handlers to declare: decorate a function with "
                          "@brooq.contrib.django.handler('topic') in a module of BROOQ['HANDLERS'], "
                          "else in the jobs module of an installed app",
    # brooq declare and manage.py brooq_declare (brooq.tools.declare): a change a line
    'help.declare': 'make the database hold the topics and schedules your code declares',
    'help.declare.description': 'Make the database hold the topics (with their settings) and the '
                                'schedules of a brooq.Registry: create what is missing, change what '
                                'differs, and list what the database holds beyond them, which only '
                                '--prune deletes. A second run changes nothing.',
    'help.declare.app': 'a brooq.Registry, or a callable returning one (e.g. myapp.tasks:registry)',
    'help.declare.prune': 'delete the topics and schedules that the code does not declare (a topic '
                          'that still has jobs is kept)',
    'help.declare.dry_run': 'show what would change, checked by the database, and write nothing',
    'cli.invalid_app': 'invalid --app {spec!r}: use MODULE:OBJECT, e.g. myapp.tasks:registry',
    'cli.not_a_registry': '{spec} is a {type}, not a brooq.Registry (OBJECT is a brooq.Registry or a '
                          'callable returning one)',
    'cli.declares_nothing': '{spec} declares no task, topic or schedule: nothing to declare',
    'declare.defaults': 'the default settings',
    'declare.topic.create': '+ topic {name}: {values}',
    'declare.topic.change': '~ topic {name}: {diffs}',
    'declare.topic.delete': '- topic {name}',
    'declare.topic.unlisted': '? topic {name}: not in the code; {prune} deletes it',
    'declare.topic.in_use': '! topic {name}: not in the code, kept: it still has jobs '
                            '(brooq drop-topic {name} --force deletes them)',
    'declare.schedule.create': '+ schedule {name}: {values}',
    'declare.schedule.change': '~ schedule {name}: {diffs}',
    'declare.schedule.delete': '- schedule {name}',
    'declare.schedule.unlisted': '? schedule {name}: not in the code; {prune} deletes it',
    'declare.done': 'declared: {created} created, {changed} changed, {deleted} deleted',
    'declare.dry_run': 'dry run, nothing written: {created} to create, {changed} to change, '
                       '{deleted} to delete',
    'declare.nothing': 'nothing changes: the database holds the topics and schedules the code declares',
    'help.dashboard': 'a web page over the queue: topics, jobs in flight, dead jobs, actions',
    'help.dashboard.address': 'where to listen (default 127.0.0.1:9470; port 0: a free one)',
    'help.dashboard.public': 'allow an address that is not loopback',
    'help.dashboard.allowed_host': 'answer requests for this Host too (repeat it for more; NAME: any port; default: $BROOQ_DASHBOARD_ALLOWED_HOSTS, comma-separated); any other Host gets 421',
    'help.dashboard.token': 'the token that allows actions (default: $BROOQ_DASHBOARD_TOKEN; none: read-only); at least 16 characters',
    'help.dashboard.token_file': "read the token from this file (e.g. systemd's LoadCredential=)",
    'help.demo': 'throwaway PostgreSQL, jobs enqueued from SQL, a worker with live progress',
    'help.demo.jobs': 'how many jobs, 20 or more (default 5000)',
    'help.demo.timeout': 'stop the worker after this long even if jobs remain (default 90s)',
    'progress.line': '{rate:6.0f} jobs/s | done {done} | failed/retrying {failed} | dead {dead} | canceled {canceled}',
    'progress.lease_lost': ' | lease lost {count}',
    'progress.in_flight': ' | in flight {count}',
    'progress.prefetched': ' (+{count} prefetched)',
    'progress.stopping': ' | stopping',
    'progress.stopped': ' | stopped',
    'progress.process': 'worker process {index}: ',
    'progress.connecting': ' | (re)connecting',
    'processes.started': 'worker process {index} started (pid {pid})',
    'processes.why_signal': 'signal',
    'processes.why_failed': 'a worker process failed',
    'processes.stopped': 'worker process {index} (pid {pid}) stopped: {status}',
    'processes.failed': 'worker process {index} (pid {pid}) failed with {status}: not restarted; stopping the others',
    'processes.stopped_by_itself': 'worker process {index} (pid {pid}) stopped by itself: not restarted',
    'processes.died': 'worker process {index} (pid {pid}) died ({status}); restarting it in {delay:.0f}s',
    'processes.parent_gone': 'the parent process is gone: stopping',
    'processes.killed_by': 'killed by {signal}',
    'processes.killed_by_number': 'killed by signal {number}',
    'processes.exit_status': 'exit status {code}',
    'text.not_deployed_hint': 'is brooq deployed in this database? brooq deploy applies the schema',
    'deploy.invalid_dsn': 'invalid DSN: {reason}',
    'deploy.no_schema_files': 'cannot find the brooq schema files (sqitch.plan, sql/install.sql) in the package ({path}); reinstall brooq or set BROOQ_ROOT',
    'deploy.cannot': 'cannot deploy: need the sqitch command and {plan}, or the psql command and {install} ({missing}); {how}',
    'deploy.get_tools': 'neither command comes with Python, and a slim image (python:3-slim) has neither: install sqitch, which installs and upgrades (Debian, Ubuntu: apt-get install sqitch, which brings psql too), or psql alone, which installs a fresh database but cannot upgrade (Debian, Ubuntu: apt-get install postgresql-client; Alpine: apk add postgresql-client; Fedora, RHEL: dnf install postgresql); or run brooq deploy from a machine that has them (docs/operations.md, What a deploy needs)',
    'deploy.get_files': 'reinstall brooq, whose package carries them, or set BROOQ_ROOT to a brooq checkout',
    'deploy.failed': '{method} failed (exit {code}): {output}{rights}',
    'deploy.need_create': 'CREATE on the database (grant create on database {database} to {role})',
    'deploy.need_createrole': 'CREATEROLE (alter role {role} createrole): a deploy creates the roles brooq_producer, brooq_worker and brooq_admin when missing and grants the first two to brooq_admin (or: admin option on brooq_producer and brooq_worker)',
    'deploy.need_owner': 'ownership of the schema brooq (deploy as its owner)',
    'deploy.need_sqitch_owner': "ownership of sqitch's registry, the schema sqitch (deploy as its owner)",
    'deploy.needs': '; deploying as {role}, not a superuser, needs: {needs} (docs/security.md, Deploying with a non-superuser owner)',
    'deploy.older': 'older than 0.1.0',
    'deploy.cannot_read': "cannot read the database's brooq schema: {reason}",
    'deploy.not_a_release': "this database holds brooq schema {version}, installed without sqitch, and {version} is not a release of the plan, so sqitch cannot tell what it contains; install a release's sql/install.sql, or deploy with sqitch from the start",
    'deploy.adopt_failed': 'sqitch deploy --log-only --to {tag} failed (exit {code}): {output}',
    'deploy.current': 'brooq schema {version} is already installed: nothing to do',
    'deploy.cannot_upgrade': 'this database holds brooq schema {version}; sql/install.sql ({shipped}) installs only into a database without a brooq schema, and upgrading needs sqitch: apt-get install sqitch, then brooq deploy again (docs/operations.md, Upgrading)',
    'deploy.missing': 'missing: {names}',
    'deploy.no_output': '(no output)',
    'demo.title': 'brooq demo: a job queue that lives in PostgreSQL',
    'demo.error': 'brooq demo: error: {reason}',
    'demo.command_failed': '{command} failed: {detail}',
    'demo.starting_cluster': '* starting a throwaway PostgreSQL on 127.0.0.1:{port} in {root} (stopped and removed at the end)',
    'demo.using': '* using {dsn}: topics demo.*, jobs are left in place',
    'demo.cluster_removed': '* stopped and removed the throwaway PostgreSQL',
    'demo.no_server': 'without --dsn the demo starts a throwaway PostgreSQL, but no server binaries were found (initdb and pg_ctl: $BROOQ_PG_BINDIR, pg_config --bindir, /usr/lib/postgresql/*/bin): install the PostgreSQL server or pass --dsn',
    'demo.schema_present': '* schema brooq is already deployed in this database: using it',
    'demo.deployed_sqitch': '* deployed the schema with sqitch deploy --verify ({count} changes)',
    'demo.deployed_psql': '* deployed the schema with psql -f sql/install.sql',
    'demo.psql_failed': 'psql failed: {error}',
    'demo.too_few_jobs': 'the demo needs 20 jobs or more, not {total}',
    'demo.enqueued': '* declared {topics} topics and enqueued {jobs} jobs from SQL ({tool}, one transaction, {seconds:.2f}s):',
    'demo.worker': '* worker: {concurrency} handlers at once, lease {lease:g}s; running until every job is done, dead or canceled',
    'demo.saw_canceled': '  job {id}: its handler saw job.canceled after {seconds:.1f}s in flight and returned',
    'demo.canceled_it': '  job {id} (demo.report) is running; a second connection ran select brooq.cancel({id}) -> {result}',
    'demo.cancel_failed': '  cancel failed: {error}',
    'demo.all_terminal': '* every job is terminal after {seconds:.1f}s; worker stopped',
    'demo.fate_title': "fate of the {count} jobs by state (one SELECT on brooq.jobs: a job's fate is its own row)",
    'demo.col.jobs': 'jobs',
    'demo.col.avg_attempts': 'avg attempts',
    'demo.col.example_error': 'example last_error',
    'demo.col.other': 'other',
    'demo.priority': 'priority: the {count} jobs enqueued last with priority => 10 were among the first {rank} of the {done} demo.email jobs to finish',
    'demo.throughput': 'throughput: the worker finished {jobs} jobs ({attempts} attempts, retries included) in {seconds:.2f}s: {jobs_rate:.0f} jobs/s, {attempts_rate:.0f} attempts/s (all jobs but the delayed and the long one)',
    'demo.overall': 'overall: {jobs} jobs, {attempts} attempts in {seconds:.1f}s ({rate:.0f} jobs/s, the {delay} delay included)',
    'demo.expected_got': '{state} {got} (expected {want})',
    'demo.not_as_planned': 'not as planned: {detail}',
    'demo.as_expected': 'as expected: done {done}, dead {dead}, canceled {canceled}',
    'demo.kind.long': 'long job, canceled while it runs',
    'demo.kind.email': 'succeed at once',
    'demo.kind.flaky': 'fail once or twice, then succeed',
    'demo.kind.doomed': 'fail every attempt: dead after 3',
    'demo.kind.delayed': 'delayed {seconds:g}s',
    'demo.kind.vip': 'enqueued last, claimed first',
    'demo.kind.jobs': 'jobs',
    'demo.the_dsn_given': '(the DSN given)',
    'dash.tab.topics': 'Topics',
    'dash.tab.in_flight': 'In flight',
    'dash.tab.jobs': 'Dead & failed',
    'dash.admin': 'admin',
    'dash.log_out': 'log out',
    'dash.read_only': 'read-only',
    'dash.log_in': 'log in',
    'dash.no_token': 'started without a token',
    'dash.chart_label': 'jobs finished per minute',
    'dash.minutes_ago': '{minutes} min ago',
    'dash.this_minute': 'this minute',
    'dash.bar': '{when}: {done} done, {dead} dead',
    'dash.no_topics': 'No topics yet: a worker declares its topics when it starts, or run {command}.',
    'dash.paused': 'paused',
    'dash.running': 'running',
    'dash.expired': 'expired',
    'dash.pause': 'pause',
    'dash.resume': 'resume',
    'dash.cancel': 'cancel',
    'dash.redrive': 're-drive',
    'dash.col.topic': 'topic',
    'dash.col.claims': 'claims',
    'dash.col.ready': 'ready',
    'dash.col.scheduled': 'scheduled',
    'dash.col.failed_to_retry': 'failed, to retry',
    'dash.col.in_flight': 'in flight',
    'dash.col.lease_expired': 'lease expired',
    'dash.col.oldest_ready': 'oldest ready',
    'dash.col.finished_per_minute': 'finished / minute, last 15 min',
    'dash.col.avg_per_minute': 'avg / min',
    'dash.col.dead_15': 'dead, 15 min',
    'dash.topics_note': "ready: claimable now; scheduled: waiting for their time (a delay or a retry's backoff); failed: waiting for a retry. Finished jobs are counted by the time they were settled (done in green, dead in red), one bar a minute. The page refreshes itself every {seconds} s.",
    'dash.nothing_in_flight': 'No job is being processed.',
    'dash.col.job': 'job',
    'dash.col.attempt': 'attempt',
    'dash.col.held_by': 'held by',
    'dash.col.claimed': 'claimed',
    'dash.col.for': 'for',
    'dash.col.lease_left': 'lease left',
    'dash.col.progress': 'progress',
    'dash.in_flight_note': 'The longest held first. A lease that expired goes back to its topic at the next reap.',
    'dash.every_topic': 'every topic',
    'dash.dead_and_failed': 'dead and failed',
    'dash.filter.topic': 'topic',
    'dash.filter.state': 'state',
    'dash.show': 'show',
    'dash.no_job_matches': 'No job matches.',
    'dash.col.state': 'state',
    'dash.col.attempts': 'attempts',
    'dash.col.since': 'since',
    'dash.col.last_error': 'last error',
    'dash.fact.topic': 'topic',
    'dash.fact.state': 'state',
    'dash.fact.attempts': 'attempts',
    'dash.attempts_of': '{attempts} of {max_attempts}',
    'dash.fact.priority': 'priority',
    'dash.fact.key': 'idempotency key',
    'dash.fact.created': 'created',
    'dash.fact.updated': 'updated',
    'dash.fact.available': 'available at',
    'dash.fact.parents': 'parents',
    'dash.fact.children': 'children',
    'dash.fact.held_by': 'held by',
    'dash.fact.lease_until': 'lease until',
    'dash.last_error': 'Last error',
    'dash.payload': 'Payload',
    'dash.result': 'Result',
    'dash.progress': 'Progress',
    'dash.job_title': 'Job {id}',
    'dash.read_only_title': 'Read-only',
    'dash.read_only_text': 'This dashboard was started without a token (--token or BROOQ_DASHBOARD_TOKEN): it has no actions.',
    'dash.log_in_title': 'Log in',
    'dash.token_label': "the dashboard's token",
    'dash.login_note': 'The token is checked once; the browser then holds a session cookie for 8 hours (HttpOnly, SameSite=Strict), not the token.',
    'dash.back': 'back to the topics',
    'dash.flash.canceled': 'Job canceled.',
    'dash.flash.not-canceled': 'Not canceled: the job is already finished (done, dead, canceled).',
    'dash.flash.retried': 'Job re-driven: it is pending again.',
    'dash.flash.not-retried': 'Not re-driven: only a dead or canceled job can be.',
    'dash.flash.paused': 'Topic paused: workers claim none of its jobs until it is resumed.',
    'dash.flash.not-paused': 'The topic was already paused.',
    'dash.flash.resumed': 'Topic resumed.',
    'dash.flash.not-resumed': 'The topic was not paused.',
    'dash.flash.login': 'Logged in: the actions are yours.',
    'dash.flash.logout': 'Logged out: the dashboard is read-only.',
    'dash.flash.retried-dead': "The topic's dead jobs were re-driven: they are pending again (1000 at most at a time).",
    'dash.flash.not-retried-dead': 'The topic has no dead job to re-drive.',
    'dash.redrive_all_dead': 're-drive every dead job of {topic}',
    'dash.find': 'find',
    'dash.find_placeholder': 'job id or idempotency key',
    'dash.found_title': 'Jobs found for {text}',
    'dash.nothing_found_title': 'Nothing found for {text}',
    'dash.nothing_found': 'No job has this id, and no job of any topic has this idempotency key.',
    'dash.find_too_long_title': 'Too long',
    'dash.find_too_long': 'Search for a job id or an idempotency key of at most {limit} characters.',
    'dash.actions_need_admin': 'actions need brooq_admin',
    'dash.reading_needs_grants': 'reading needs the grants of docs/dashboard.md, "Its database role"',
    'dash.refused_by_db': 'Refused by the database',
    'dash.role_may_not': "The dashboard's database role may not do this: {why} ({error}).",
    'dash.db_error': 'The database answered with an error',
    'dash.unknown_state': 'Unknown state',
    'dash.job_not_found': 'Job {id} not found',
    'dash.topic_not_found': 'Topic {topic} not found',
    'dash.no_such_topic': 'No topic has this name: never declared (brooq.declare_topic, or a worker of the topic at its start).',
    'dash.no_such_job': "No job has this id: never enqueued, or purged after its topic's retention.",
    'dash.refused': 'Refused',
    'dash.read_only_no_token': 'This dashboard is read-only: it was started without a token (--token or BROOQ_DASHBOARD_TOKEN).',
    'dash.log_in_first': "Actions need the dashboard's token: log in first.",
    'dash.bad_form': 'This form did not come from this dashboard (its CSRF field or origin is wrong): reload the page.',
    'dash.read_only_login': 'This dashboard is read-only: it was started without a token.',
    'dash.foreign_form': 'This form did not come from this dashboard.',
    'dash.wrong_token': "That is not the dashboard's token.",
    'dash.serving': 'brooq dashboard on http://{host}:{port}/ ({mode})',
    'dash.mode_actions': "actions for the token's holder",
    'dash.mode_read_only': 'read-only: no token',
    'dash.choose_state': 'Choose one of the states the list offers.',
    'dash.bad_filter_title': 'Filter refused',
    'dash.filter_too_long': 'A topic, key or payload filter has at most {limit} characters.',
    'dash.bad_payload_filter': 'The payload filter is field = value (customer = 42, order.id = 7, name = Ann) or a JSON object ({{"customer": 42}}): the jobs whose payload contains it.',
    'dash.bad_cursor': 'This page link is not one of this list: start from its first page.',
    'dash.bulk_not_for_state': 'Bulk cancel needs a list of pending, scheduled, waiting, processing or failed jobs, bulk re-drive a list of dead or canceled jobs: choose the state first.',
    'dash.filter.key': 'idempotency key',
    'dash.filter.payload': 'payload',
    'dash.state.scheduled': 'scheduled',
    'dash.state.pending_ready': 'pending (ready)',
    'dash.first_page': 'first page',
    'dash.next_page': 'next page',
    'dash.jobs_note_newest': 'Newest first, {page} a page.',
    'dash.jobs_note_done': 'The last finished first, {page} a page.',
    'dash.jobs_note_claim': 'In the order workers claim them (priority, then time), {page} a page.',
    'dash.partial_page': 'This page stopped before it was full: it reads at most {scanned} jobs, a share of them a topic, and a filter no index answers passes over some. More may match further on: the next page goes on from here.',
    'dash.col.priority': 'priority',
    'dash.col.key': 'key',
    'dash.col.payload': 'payload',
    'dash.bulk.cancel_these': 'cancel these...',
    'dash.bulk.retry_these': 're-drive these...',
    'dash.bulk.title_cancel': 'Cancel the jobs of this list',
    'dash.bulk.title_retry': 'Re-drive the jobs of this list',
    'dash.bulk.confirm_cancel': 'cancel them ({count})',
    'dash.bulk.confirm_retry': 're-drive them ({count})',
    'dash.bulk.back': 'back to the list',
    'dash.bulk.note': 'One action touches at most {cap} jobs, the first of the list, each through brooq.cancel or brooq.retry, and reads at most {scanned} jobs to find them: run it again for the rest. A job whose state changed since is left as it is.',
    'dash.workflow': 'Workflow',
    'dash.steps': 'Steps',
    'dash.col.step': 'step',
    'dash.col.kind': 'kind',
    'dash.steps_more': 'The first {shown} steps: brooq job ID --json lists them all.',
    'dash.tree_up': 'waits for',
    'dash.tree_down': 'waited for by',
    'dash.tree_note': '{depth} levels each way, at most {fan} parents or children of each job (the lowest ids), {nodes} jobs each way.',
}

# A topic setting's meaning, the help of its option (brooq declare-topic, alter-topic): the
# doc of its field of brooq.settings.TopicSettings.
ENGLISH.update({f"help.topic.{s.name}": s.doc for s in SETTINGS})


# Texts with a count: (singular, plural) in English; a catalogue gives each language's
# forms (.po msgid_plural and msgstr[0..], the form chosen by its Plural-Forms header).
PLURALS: dict[str, tuple[str, str]] = {
    'dash.bulk.at_least': ('at least {count} job matches; this action touches it (at most {cap} at a time)', 'at least {count} jobs match; this action touches these {count} (at most {cap} at a time): run it again for the rest'),
    'dash.bulk.exactly': ('{count} job matches.', '{count} jobs match.'),
    'dash.flash.bulk-canceled': ('{count} job canceled.', '{count} jobs canceled.'),
    'dash.flash.bulk-retried': ('{count} job re-driven: it is pending again.', '{count} jobs re-driven: they are pending again.'),
    'demo.delayed': ("delayed: the {count} job enqueued with delay => '{delay}' finished {seconds:.1f}s or more after its enqueue", "delayed: the {count} jobs enqueued with delay => '{delay}' finished {seconds:.1f}s or more after their enqueue"),
    'demo.interrupted': ('* worker stopped after {seconds:.1f}s (interrupted) with {count} job not finished', '* worker stopped after {seconds:.1f}s (interrupted) with {count} jobs not finished'),
    'demo.timeout': ('* timeout: {count} job not finished after {timeout:g}s; worker stopped', '* timeout: {count} jobs not finished after {timeout:g}s; worker stopped'),
    'processes.stopping': ('stopping {count} worker process ({why})', 'stopping {count} worker processes ({why})'),
    'processes.running': ('{count} worker process running; SIGTERM or Ctrl-C stops it', '{count} worker processes running; SIGTERM or Ctrl-C stops them all'),
    'worker.handlers_left_running': ('worker {worker}: stopping with {count} handler still running; handing its job back to the queue (if the database does not answer, its lease expires and a reap returns it)', 'worker {worker}: stopping with {count} handlers still running; handing their jobs back to the queue (if the database does not answer, their leases expire and a reap returns them)'),
    'worker.unsettled_at_exit': ('worker {worker}: could not settle {count} finished job before exit: {error}', 'worker {worker}: could not settle {count} finished jobs before exit: {error}'),
    'worker.handing_back': ('worker {worker}: handing back {count} prefetched job that never started', 'worker {worker}: handing back {count} prefetched jobs that never started'),
    'worker.stopping': ('worker {worker}: stopping; {count} job in flight, waiting up to {grace}', 'worker {worker}: stopping; {count} jobs in flight, waiting up to {grace}'),
    'cli.dropped_topic_jobs': ('dropped topic {topic} and its {count} job', 'dropped topic {topic} and its {count} jobs'),
    'worker.reaped': ('worker {worker}: reaped {count} job whose lease expired', 'worker {worker}: reaped {count} jobs whose lease expired'),
    'cli.redrove_dead': ('re-drove {count} dead job of topic {topic}', 're-drove {count} dead jobs of topic {topic}'),
    'cli.redrove_dead_or_canceled': ('re-drove {count} dead or canceled job of topic {topic}', 're-drove {count} dead or canceled jobs of topic {topic}'),
    'cli.flush_confirm_waiting': ('delete {count} queued (pending, failed) job of topic {topic}? [y/N] ', 'delete {count} queued (pending, failed) jobs of topic {topic}? [y/N] '),
    'cli.flush_confirm_completed': ('delete {count} finished (done, dead, canceled) job of topic {topic}? [y/N] ', 'delete {count} finished (done, dead, canceled) jobs of topic {topic}? [y/N] '),
    'cli.flushed_waiting': ('flushed {count} queued (pending, failed) job of topic {topic}', 'flushed {count} queued (pending, failed) jobs of topic {topic}'),
    'cli.flushed_completed': ('flushed {count} finished (done, dead, canceled) job of topic {topic}', 'flushed {count} finished (done, dead, canceled) jobs of topic {topic}'),
    'cli.flush_needs_yes_waiting': ('not flushing {count} queued (pending, failed) job of topic {topic} without a confirmation: stdin is not a terminal; pass --yes', 'not flushing {count} queued (pending, failed) jobs of topic {topic} without a confirmation: stdin is not a terminal; pass --yes'),
    'cli.flush_needs_yes_completed': ('not flushing {count} finished (done, dead, canceled) job of topic {topic} without a confirmation: stdin is not a terminal; pass --yes', 'not flushing {count} finished (done, dead, canceled) jobs of topic {topic} without a confirmation: stdin is not a terminal; pass --yes'),
    'cli.deployed_changes': ('deployed {count} change with sqitch deploy --verify', 'deployed {count} changes with sqitch deploy --verify'),
    'dash.more_characters': ('... ({count} more character)', '... ({count} more characters)'),
    'dash.more_parents': ('... ({count} more parent)', '... ({count} more parents)'),
    'cli.short_token': ("the dashboard token has {count} character: use 16 or more, e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))'", "the dashboard token has {count} characters: use 16 or more, e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"),
}


LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # gettext's order
# A language tag (ru, ru_RU, ru_RU.UTF-8, sr@latin, pt-BR): gettext joins it into a path
# (<localedir>/<lang>/LC_MESSAGES), so "/", ".." and a leading "." never pass.
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")


def closest(name: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` close enough to ``name`` to be what was meant (``email`` for
    a typo'd ``emial``), else None: what a "did you mean" offers."""
    found = difflib.get_close_matches(name, [n for n in names if n != name], n=1, cutoff=0.75)
    return found[0] if found else None


def is_language_tag(text: str) -> bool:
    return _TAG.fullmatch(text) is not None and ".." not in text


def languages() -> tuple[str, ...]:
    """The languages to look for, best first: BROOQ_LANG if set (it wins), else the first
    locale variable set (LANGUAGE, a colon-separated list, LC_ALL, LC_MESSAGES, LANG, as
    gettext reads them). Only language tags: anything else (a path) is ignored."""
    env = os.environ
    return _languages(env.get("BROOQ_LANG"), tuple(env.get(v) for v in LOCALE_VARIABLES))


@lru_cache(maxsize=8)
def _languages(brooq_lang: str | None, locale: tuple[str | None, ...]) -> tuple[str, ...]:
    given = [brooq_lang] if brooq_lang else next((v.split(":") for v in locale if v), [])
    return tuple(lang for lang in given if is_language_tag(lang))


@lru_cache(maxsize=8)
def _catalogue(langs: tuple[str, ...]) -> gettext.NullTranslations:
    if not langs:
        return gettext.NullTranslations()  # English
    return gettext.translation(DOMAIN, LOCALEDIR, languages=list(langs), fallback=True)


def template(key: str) -> str:
    """The text of `key` in the current language, its {fields} not filled in."""
    text = _catalogue(languages()).gettext(key)
    return ENGLISH[key] if text == key else text  # no catalogue, or not in it: English


def _(key: str, **fields: Any) -> str:
    """The text of `key` in the current language, its fields filled in."""
    return template(key).format(**fields)


def language_tag() -> str:
    """The current language's tag (its catalogue's Language header; "en" without one),
    e.g. for a web page's <html lang>."""
    catalogue = _catalogue(languages())
    if isinstance(catalogue, gettext.GNUTranslations):
        return catalogue.info().get("language", "en")
    return "en"


def plural_id(key: str) -> str:
    """The msgid_plural of a plural key in the catalogues."""
    return f"{key}_plural"


def _n(key: str, count: int, **fields: Any) -> str:
    """The text of the plural `key` for `count` in the current language, {count} and the
    fields filled in: the form is chosen by the catalogue's Plural-Forms (English: 1, else)."""
    text = _catalogue(languages()).ngettext(key, plural_id(key), count)
    if text in (key, plural_id(key)):  # no catalogue, or not in it: English
        text = PLURALS[key][0 if count == 1 else 1]
    return text.format(count=count, **fields)


def keys() -> set[str]:
    """Every key, plain and plural."""
    return set(ENGLISH) | set(PLURALS)


# --- a tiny msgfmt (the logic of CPython's Tools/i18n/msgfmt.py, for our simple .po files)

def read_po(path: Path) -> dict[str, str]:
    """msgid -> msgstr of a .po file, as msgfmt stores them: a plural entry's msgid is
    "key\\0key_plural" and its msgstr the forms msgstr[0], msgstr[1], ... joined by "\\0"
    (single and continued strings, plurals; no contexts)."""
    messages: dict[str, str] = {}
    section, msgid, plural, forms = "", "", "", {0: ""}

    def flush() -> None:
        if section.startswith("msgstr") and (msgid or forms[0]):
            key = f"{msgid}\0{plural}" if plural else msgid
            messages[key] = "\0".join(forms[i] for i in sorted(forms))

    for raw in path.read_text(encoding="utf-8").splitlines() + [""]:
        line = raw.strip()
        if line.startswith("#"):
            continue
        if line.startswith("msgid ") or not line:
            flush()
            section = ""
            if not line:
                continue
        if line.startswith("msgid "):
            section, msgid, plural, forms = "msgid", ast.literal_eval(line[6:]), "", {0: ""}
        elif line.startswith("msgid_plural "):
            section, plural = "msgid_plural", ast.literal_eval(line[13:])
        elif line.startswith("msgstr["):
            index, _sep, rest = line[7:].partition("]")
            section = f"msgstr{int(index)}"
            forms[int(index)] = ast.literal_eval(rest.strip())
        elif line.startswith("msgstr "):
            section, forms = "msgstr0", {0: ast.literal_eval(line[7:])}
        elif line.startswith('"'):
            if section == "msgid":
                msgid += ast.literal_eval(line)
            elif section == "msgid_plural":
                plural += ast.literal_eval(line)
            else:
                forms[int(section[6:])] += ast.literal_eval(line)
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
