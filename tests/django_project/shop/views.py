from django.db import transaction
from django.http import HttpRequest, JsonResponse

import brooq.contrib.django as brooq_django
from shop.models import Order


def place_order(request: HttpRequest) -> JsonResponse:
    email = request.POST["email"]
    with transaction.atomic():                       # the order and its job: both or neither
        order = Order.objects.create(email=email)
        job = brooq_django.enqueue("email", {"order": order.id}, key=f"order-{order.id}")
        if email.endswith("@example.invalid"):
            raise ValueError(f"cannot deliver to {email}")   # rolls back the order and the job
    return JsonResponse({"order": order.id, "job": job.id})
