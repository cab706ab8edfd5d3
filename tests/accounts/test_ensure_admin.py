"""The ensure_admin command: the first admin of a fresh site, and how to log in.

    nice .venv/bin/python -m pytest tests/accounts/test_ensure_admin.py
"""

from __future__ import annotations

import io
import re
import stat

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

PASSWORD = re.compile(r"with password “([^”]+)”")


@pytest.fixture
def data_dir(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    return tmp_path


def ensure_admin(*args) -> str:
    out = io.StringIO()
    call_command("ensure_admin", *args, stdout=out)
    return out.getvalue()


def test_it_creates_a_first_admin_whose_printed_password_logs_in(data_dir, client, django_user_model):
    output = ensure_admin()

    admin = django_user_model.objects.get()
    assert admin.username == "admin"
    assert admin.is_staff and admin.is_superuser and admin.is_active
    password = PASSWORD.search(output)[1]
    assert len(password) >= 12
    assert client.login(username="admin", password=password)
    assert client.get("/admin/").status_code == 200


def test_it_saves_the_first_password_in_a_private_file_in_the_data_dir(data_dir):
    output = ensure_admin()

    note = data_dir / "first-admin.txt"
    password = PASSWORD.search(output)[1]
    assert note.read_text() == f"username: admin\npassword: {password}\n"
    assert stat.S_IMODE(note.stat().st_mode) == 0o600
    assert str(note) in output


def test_it_creates_no_second_admin_and_shows_no_password_when_run_again(data_dir, django_user_model):
    first = ensure_admin()
    note = (data_dir / "first-admin.txt").read_text()

    second = ensure_admin()

    assert django_user_model.objects.filter(is_staff=True).count() == 1
    assert "An admin already exists" in second
    assert not PASSWORD.search(second)
    assert PASSWORD.search(first)[1] not in second
    assert (data_dir / "first-admin.txt").read_text() == note


def test_it_leaves_a_site_that_already_has_an_admin_alone(data_dir, admin_user, django_user_model):
    output = ensure_admin()

    assert "An admin already exists" in output
    assert list(django_user_model.objects.all()) == [admin_user]
    assert not (data_dir / "first-admin.txt").exists()


def test_it_uses_the_username_asked_for(data_dir, client):
    output = ensure_admin("--username", "librarian")

    assert "“librarian”" in output
    assert client.login(username="librarian", password=PASSWORD.search(output)[1])
