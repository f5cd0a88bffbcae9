from dataclasses import dataclass

import brooq
import brooq.contrib.django as brooq_django
from shop.models import Order


@brooq_django.handler("email", max_attempts=5)
def send_order_mail(job: brooq.Job) -> dict:
    order = Order.objects.get(id=job.payload["order"])
    # ... your mail delivery here: it must be idempotent (a job may run twice)
    Order.objects.filter(id=order.id).update(mailed=True)
    return {"to": order.email}


@dataclass
class Digest:
    period: str
    to: list[str]


@brooq.periodic("0 7 * * *", name="digest.daily", payload=Digest("day", ["team@example.com"]))
@brooq_django.task("digest", max_attempts=3)
def send_digest(job: brooq.Job, digest: Digest) -> int:
    mailed = Order.objects.filter(mailed=True).count()
    # ... one mail to digest.to with the orders of the period
    return mailed
