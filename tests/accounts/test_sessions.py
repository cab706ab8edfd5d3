"""Sessions live in the database and the logged-in user is read from it on
every request (Django's own session store and model backend): whatever ends a
session in one web process — a logout, an expiry, a deactivated account, a
new password — holds at once in every other, and sessions outlive a restart.
Another process's logout is a deleted session row here; a process-local cache
of sessions would keep serving it and fail these tests."""

import importlib
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def two_processes(member):
    """Two browsers' worth of requests on one session, as two web processes see it."""
    first = Client()
    first.force_login(member)
    second = Client()
    second.cookies[settings.SESSION_COOKIE_NAME] = first.cookies[settings.SESSION_COOKIE_NAME].value
    for client in (first, second):
        assert client.get("/").status_code == 200
    return first, second


def _logged_out(client) -> bool:
    response = client.get("/")
    return response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_logout_in_one_process_ends_the_session_in_the_other(two_processes):
    first, second = two_processes
    assert first.post("/accounts/logout/").status_code == 302
    assert _logged_out(second) and _logged_out(first)


def test_a_session_row_deleted_elsewhere_is_over_on_the_next_request(two_processes):
    _, second = two_processes
    Session.objects.all().delete()
    assert _logged_out(second)


def test_an_expired_session_is_over(two_processes):
    _, second = two_processes
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    assert _logged_out(second)


def test_a_deactivated_account_or_a_new_password_ends_its_sessions(two_processes, member, django_user_model):
    first, second = two_processes
    django_user_model.objects.filter(pk=member.pk).update(is_active=False)  # no signal, as another process would
    assert _logged_out(second)
    django_user_model.objects.filter(pk=member.pk).update(is_active=True)
    assert first.get("/").status_code == 200
    member.set_password("a new password 2026")
    django_user_model.objects.filter(pk=member.pk).update(password=member.password)
    assert _logged_out(first)


def test_logging_in_through_the_form_gives_a_session_the_next_request_knows(member, django_user_model):
    member.set_password("correct horse battery")
    member.save()
    client = Client()
    assert client.post("/accounts/login/", {"username": member.username, "password": "wrong"}).status_code == 200
    assert _logged_out(client)
    response = client.post("/accounts/login/", {"username": member.username, "password": "correct horse battery"})
    assert response.status_code == 302
    page = client.get("/")
    assert page.status_code == 200 and page.wsgi_request.user == member
    assert page.wsgi_request.user.last_login is not None and page.wsgi_request.user.is_active


def test_a_session_from_before_the_upgrade_stays_logged_in(member):
    """Sessions made while the app had its own copy of Django's model backend
    name that copy; the upgrade's migration makes them name Django's."""
    from django.apps import apps
    from django.db import connection

    migration = importlib.import_module("mnote.accounts.migrations.0002_sessions_name_djangos_backend")
    client = Client()
    client.force_login(member, backend=migration.FORMER_BACKEND)
    assert _logged_out(client)
    migration.name_djangos_backend(apps, SimpleNamespace(connection=connection))  # as `migrate` calls it
    page = client.get("/")
    assert page.status_code == 200 and page.wsgi_request.user == member


def test_a_session_survives_a_restart(two_processes, member):
    """Nothing of a session is kept in a process: a new process (a client with
    only the cookie, after the app's caches are cleared) is still logged in."""
    from django.core.cache import cache

    first, _ = two_processes
    cache.clear()
    after_restart = Client()
    after_restart.cookies[settings.SESSION_COOKIE_NAME] = first.cookies[settings.SESSION_COOKIE_NAME].value
    page = after_restart.get("/")
    assert page.status_code == 200 and page.wsgi_request.user == member


def test_a_failed_login_checks_the_password_once(member, monkeypatch):
    from django.contrib.auth.hashers import get_hasher

    member.set_password("correct horse battery")
    member.save()
    hasher = type(get_hasher())
    checks = []
    real = hasher.verify
    monkeypatch.setattr(hasher, "verify", lambda self, password, encoded: checks.append(1) or real(self, password, encoded))
    assert Client().login(username=member.username, password="wrong") is False
    assert len(checks) == 1
    assert Client().login(username=member.username, password="correct horse battery") is True
