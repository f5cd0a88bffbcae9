from django.db import models


class Order(models.Model):
    email = models.EmailField()
    mailed = models.BooleanField(default=False)
