import brooq
import brooq.contrib.django as brooq_django
from shop.models import Order


@brooq_django.handler("email", max_attempts=5)
def send_order_mail(job: brooq.Job) -> dict:
    order = Order.objects.get(id=job.payload["order"])
    # ... your mail delivery here: it must be idempotent (a job may run twice)
    Order.objects.filter(id=order.id).update(mailed=True)
    return {"to": order.email}
