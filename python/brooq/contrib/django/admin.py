"""brooq's jobs in the Django admin (docs/django.md, "The admin"), found by Django's
admin autodiscovery when brooq.contrib.django and django.contrib.admin are installed.

Read-only: a list of the jobs, newest first, filtered by topic and state, searched by id
or idempotency key, and a job's page. Two actions, each allowed by a permission of its
own (``brooq.cancel_job``, ``brooq.retry_job``; a superuser has them): cancel and
re-drive, one call of brooq.cancel or brooq.retry per job, at most ACTION_MAX jobs an
action, on BROOQ['DATABASE'] (whose role needs brooq_admin for them). Nothing here
writes brooq's tables: the model is unmanaged, over the view brooq.jobs.

The list stays cheap on a deep table: no count of every row (at most COUNT_MAX are
counted), topics from brooq.topics (never a DISTINCT over the jobs), a key searched
with every topic named, so that the (topic, key) index answers it.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages  # type: ignore[import-untyped]
from django.core.paginator import Paginator  # type: ignore[import-untyped]
from django.db import DatabaseError, connections, transaction  # type: ignore[import-untyped]
from django.db.models import Q  # type: ignore[import-untyped]
from django.utils.functional import cached_property  # type: ignore[import-untyped]
from django.utils.html import format_html  # type: ignore[import-untyped]

import brooq.contrib.django as brooq_django
from brooq.contrib.django.models import Job
from brooq.errors import BrooqError
from brooq.tools import queries as tool_queries

ACTION_MAX = 1000  # jobs one cancel or re-drive touches at most
COUNT_MAX = 10_000  # rows the list counts at most (a deep table is not counted whole)
SHOWN = 65536  # characters of a payload, result or progress on a job's page


def _alias() -> str:
    return brooq_django.brooq_settings().database


def topic_names() -> list[str]:
    """The topics' names from brooq.topics (its grant: docs/django.md); none without it."""
    alias = _alias()
    try:
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:  # a savepoint
            cursor.execute(tool_queries.DASHBOARD_TOPIC_NAMES)
            return [row[0] for row in cursor.fetchall()]
    except DatabaseError:  # a role without the grant: no topic filter, no key search
        return []


class BoundedPaginator(Paginator):  # type: ignore[misc]
    """Counts at most COUNT_MAX rows: `select count(*)` of a view over millions of jobs
    would scan them all for every page."""

    @cached_property  # type: ignore[untyped-decorator]
    def count(self) -> int:
        return int(self.object_list[:COUNT_MAX].count())


class TopicFilter(admin.SimpleListFilter):  # type: ignore[misc]
    title = "topic"
    parameter_name = "topic"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [(name, name) for name in topic_names()]

    def queryset(self, request: Any, queryset: Any) -> Any:
        return queryset.filter(topic=self.value()) if self.value() else queryset


def pretty(text: str | None) -> str:
    """A jsonb value read as text, indented when Python can decode it, else as stored."""
    if text is None:
        return "-"
    shown = text[:SHOWN]
    if len(text) <= SHOWN:
        try:
            shown = json.dumps(json.loads(text), indent=2, ensure_ascii=False, sort_keys=True)
        except (ValueError, RecursionError):
            pass
    return str(format_html('<pre style="white-space:pre-wrap">{}</pre>', shown))


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):  # type: ignore[misc]
    list_display = ("id", "topic", "state", "attempts", "max_attempts", "priority",
                    "idempotency_key", "created_at", "updated_at")
    list_filter = (TopicFilter, "state")
    search_fields = ("id",)  # the box; get_search_results reads it as an id or a key
    search_help_text = "a job id, or an idempotency key"
    paginator = BoundedPaginator
    show_full_result_count = False
    list_per_page = 100
    actions = ("cancel_jobs", "retry_jobs")
    fields = ("id", "topic", "state", "attempts", "max_attempts", "priority", "idempotency_key",
              "group_key", "available_at", "created_at", "updated_at", "locked_by", "locked_until",
              "last_error", "payload_shown", "result_shown", "progress_shown")
    readonly_fields = fields

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).using(_alias())

    def get_search_results(self, request: Any, queryset: Any, search_term: str) -> tuple[Any, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        match = Q(topic__in=topic_names(), idempotency_key=term)
        if term.isascii() and term.isdigit() and int(term) < 2**63:
            match |= Q(id=int(term))
        return queryset.filter(match), False

    # read-only: no add, change or delete; acting is cancel and re-drive, by permission
    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_cancel_permission(self, request: Any) -> bool:
        return bool(request.user.has_perm("brooq.cancel_job"))

    def has_retry_permission(self, request: Any) -> bool:
        return bool(request.user.has_perm("brooq.retry_job"))

    @admin.display(description="payload")  # type: ignore[untyped-decorator]
    def payload_shown(self, job: Job) -> str:
        return pretty(job.payload)

    @admin.display(description="result")  # type: ignore[untyped-decorator]
    def result_shown(self, job: Job) -> str:
        return pretty(job.result)

    @admin.display(description="progress")  # type: ignore[untyped-decorator]
    def progress_shown(self, job: Job) -> str:
        return pretty(job.progress)

    def _act(self, request: Any, queryset: Any, call: Any, done: str) -> None:
        ids = list(queryset.order_by("-id").values_list("id", flat=True)[:ACTION_MAX + 1])
        if len(ids) > ACTION_MAX:
            self.message_user(request, f"More than {ACTION_MAX} jobs selected: only the newest "
                              f"{ACTION_MAX} were asked; run the action again for the rest.",
                              messages.WARNING)
            ids = ids[:ACTION_MAX]
        changed = 0
        try:
            for job_id in ids:
                changed += bool(call(job_id, using=_alias()))
        except BrooqError as exc:  # the database refused: brooq.PermissionDenied names the grant
            self.message_user(request, f"{changed} {done}; then the database refused: {exc}",
                              messages.ERROR)
            return
        self.message_user(request, f"{changed} of {len(ids)} jobs {done}"
                          + ("" if changed == len(ids) else " (the others were not in a state for it)."))

    @admin.action(  # type: ignore[untyped-decorator]
        description="Cancel the selected jobs (brooq.cancel)", permissions=["cancel"])
    def cancel_jobs(self, request: Any, queryset: Any) -> None:
        self._act(request, queryset, brooq_django.cancel, "canceled")

    @admin.action(  # type: ignore[untyped-decorator]
        description="Re-drive the selected jobs (brooq.retry)", permissions=["retry"])
    def retry_jobs(self, request: Any, queryset: Any) -> None:
        self._act(request, queryset, brooq_django.retry, "re-driven")
