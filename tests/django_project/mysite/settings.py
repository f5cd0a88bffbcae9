"""A Django project with brooq (docs/django.md); tests/test_django.py runs it."""

import os

SECRET_KEY = "only-for-the-brooq-example"
DEBUG = True
ALLOWED_HOSTS = ["localhost", "testserver"]
ROOT_URLCONF = "mysite.urls"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",   # brooq's jobs in the admin (brooq.contrib.django.admin)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "brooq.contrib.django",   # manage.py brooq_worker, manage.py brooq_deploy, the admin's jobs
    "shop",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",   # with psycopg 3 installed
        "NAME": os.environ.get("APP_DB_NAME", "appdb"),
        "USER": os.environ.get("APP_DB_USER", "app"),
        "PASSWORD": os.environ.get("APP_DB_PASSWORD", ""),   # never on a command line, never logged
        "HOST": os.environ.get("APP_DB_HOST", "localhost"),
        "PORT": os.environ.get("APP_DB_PORT", "5432"),
    },
}

BROOQ = {
    "HANDLERS": ["shop.jobs"],    # default: the jobs module of every installed app
    "CONCURRENCY": 4,             # any brooq.WorkerConfig setting, in upper case
    "LEASE": "30s",
    "POLL_INTERVAL": os.environ.get("APP_BROOQ_POLL", "1s"),
}

# The admin (brooq's jobs in it: docs/django.md, "The admin").
MIDDLEWARE = [  # the admin's (its views check CSRF themselves)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": ["django.template.context_processors.request",
                                       "django.contrib.auth.context_processors.auth",
                                       "django.contrib.messages.context_processors.messages"]},
}]

# For tests/test_django.py only: a database brooq refuses.
DATABASES["legacy"] = {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
