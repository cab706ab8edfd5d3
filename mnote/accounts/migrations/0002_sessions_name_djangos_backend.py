"""Sessions made while the app had its own copy of Django's model backend
name that copy, which is gone: they are made to name Django's backend, so
nobody is logged out by the upgrade."""

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db import migrations
from django.utils import timezone

FORMER_BACKEND = "mnote.accounts.backends.ModelBackend"
DJANGOS_BACKEND = "django.contrib.auth.backends.ModelBackend"


def name_djangos_backend(apps, schema_editor):
    session_model = apps.get_model("sessions", "Session")
    store = SessionStore()
    live = session_model.objects.using(schema_editor.connection.alias).filter(expire_date__gt=timezone.now())
    for session in live.iterator():
        data = store.decode(session.session_data)
        if data.get(BACKEND_SESSION_KEY) == FORMER_BACKEND:
            data[BACKEND_SESSION_KEY] = DJANGOS_BACKEND
            session.session_data = store.encode(data)
            session.save(update_fields=["session_data"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(name_djangos_backend, migrations.RunPython.noop)]
