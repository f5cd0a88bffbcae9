"""brooq.contrib.django.models.Job: unmanaged, over the view brooq.jobs that brooq
deploys (this migration creates nothing; it records the model, so that
`makemigrations` writes nothing into brooq's package)."""

from typing import Any, ClassVar

from django.db import migrations, models  # type: ignore[import-untyped]


class Migration(migrations.Migration):  # type: ignore[misc]
    initial = True
    dependencies: ClassVar[list[tuple[str, str]]] = []
    operations: ClassVar[list[Any]] = [
        migrations.CreateModel(
            name="Job",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("topic", models.TextField()),
                ("state", models.TextField(choices=[
                    ("pending", "pending"), ("processing", "processing"), ("failed", "failed"),
                    ("done", "done"), ("dead", "dead"), ("canceled", "canceled"),
                    ("waiting", "waiting")])),
                ("attempts", models.IntegerField()),
                ("max_attempts", models.IntegerField()),
                ("priority", models.IntegerField()),
                ("payload", models.TextField()),
                ("idempotency_key", models.TextField(null=True)),
                ("available_at", models.DateTimeField()),
                ("created_at", models.DateTimeField()),
                ("updated_at", models.DateTimeField()),
                ("locked_by", models.TextField(null=True)),
                ("locked_until", models.DateTimeField(null=True)),
                ("last_error", models.TextField(null=True)),
                ("result", models.TextField(null=True)),
                ("progress", models.TextField(null=True)),
                ("group_key", models.TextField(null=True)),
            ],
            options={
                "db_table": '"brooq"."jobs"',
                "ordering": ("-id",),
                "default_permissions": ("view",),
                "permissions": (("cancel_job", "Can cancel jobs (brooq.cancel)"),
                                ("retry_job", "Can re-drive jobs (brooq.retry)")),
                "managed": False,
            },
        ),
    ]
