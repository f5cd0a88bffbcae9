"""The tests of docs/testing.md's Django example (`python manage.py test shop`), run by
tests/test_testing_plugin.py."""

from django.test import TestCase

import brooq.contrib.django as brooq_django
from brooq.testing import assert_enqueued, declare_topics, drain, refute_enqueued
from shop.models import Order


class PlaceOrderTests(TestCase):
    def setUp(self) -> None:
        self.conn = brooq_django.connection()  # Django's, in the TestCase's transaction
        self.worker = brooq_django.worker()  # the handlers of BROOQ["HANDLERS"]
        declare_topics(self.conn, self.worker)  # rolled back with the test

    def test_an_order_is_mailed(self) -> None:
        answer = self.client.post("/orders", {"email": "ann@example.com"}).json()
        assert_enqueued(self.conn, "email", {"order": answer["order"]}, key=f"order-{answer['order']}")
        drained = drain(self.conn, self.worker)  # the handler's ORM sees the test's order
        self.assertEqual((drained.done, drained.dead), (1, 0))
        self.assertTrue(Order.objects.get(id=answer["order"]).mailed)

    def test_a_refused_order_enqueues_nothing(self) -> None:
        with self.assertRaises(ValueError):
            self.client.post("/orders", {"email": "bob@example.invalid"})
        refute_enqueued(self.conn, "email")
