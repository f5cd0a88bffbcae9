from django.db import migrations

from brooq.contrib.django import deploy_schema


class Migration(migrations.Migration):
    atomic = False  # the deploy runs in a transaction of its own (sqitch, else psql)
    dependencies = [("shop", "0001_initial")]
    operations = [migrations.RunPython(deploy_schema, migrations.RunPython.noop)]
