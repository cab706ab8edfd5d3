"""People in the app, for admins: accounts, groups and the roots they see,
invitations and password resets by one-time link, deactivation.

    .venv/bin/python -m pytest -q tests/accounts/test_people.py
"""

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from mnote.accounts.models import Invitation
from mnote.library.models import IndexedRoot

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def _link(response, element_id: str) -> str:
    match = re.search(rf'id="{element_id}">https?://[^/]+(/[^<]+)<', response.content.decode())
    assert match, response.content.decode()[:3000]
    return match.group(1)


def test_an_admin_invites_and_the_link_makes_one_account_once(admin_client, django_user_model, library_dir):
    client = Client()
    (library_dir / "board").mkdir()
    board = IndexedRoot.objects.create(name="Board", path="board", visible_to_all=False)
    response = admin_client.post("/people/groups/add/", {"name": "Board members", "roots": [board.pk]})
    assert response.status_code == 302
    group = Group.objects.get(name="Board members")
    assert list(board.visible_to_groups.all()) == [group]  # the root's own visibility, edited from the group

    response = admin_client.post("/people/invite/", {"note": "Nora", "groups": [group.pk]}, follow=True)
    link = _link(response, "invitation-link")
    page = client.get(link)
    assert page.status_code == 200 and "Join the library" in page.content.decode()
    answer = client.post(
        link, {"username": "nora", "first_name": "Nora N", "password1": "a-long-pass-phrase", "password2": "a-long-pass-phrase"}
    )
    assert answer.status_code == 302 and answer.url == "/"
    nora = django_user_model.objects.get(username="nora")
    assert not nora.is_staff and list(nora.groups.all()) == [group]
    assert IndexedRoot.objects.visible_to(nora).filter(pk=board.pk).exists()
    assert client.get("/").status_code == 200  # signed in

    client.logout()
    again = client.get(link)
    assert again.status_code == 404 and "This link does not work" in again.content.decode()
    again = client.post(link, {"username": "eve", "password1": "a-long-pass-phrase", "password2": "a-long-pass-phrase"})
    assert again.status_code == 404 and not django_user_model.objects.filter(username="eve").exists()


def test_an_expired_or_made_up_invitation_link_is_refused(admin_client):
    client = Client()
    admin_client.post("/people/invite/", {"note": "late"})
    invitation = Invitation.objects.get()
    from mnote.accounts.invitations import invitation_path

    link = invitation_path(invitation)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    assert client.get(link).status_code == 404
    assert client.get(link[:-6] + "abcdef/").status_code == 404
    assert client.get("/people/join/not-a-token/").status_code == 404


def test_a_password_reset_link_works_once(admin_client, member):
    client = Client()
    response = admin_client.post(f"/people/users/{member.pk}/reset-link/")
    link = _link(response, "reset-link")
    form = client.get(link, follow=True)
    assert "Set a new password" in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "another-long-phrase", "new_password2": "another-long-phrase"})
    assert done.status_code == 302
    member.refresh_from_db()
    assert member.check_password("another-long-phrase")
    client.logout()
    assert "This link does not work" in client.get(link, follow=True).content.decode()


def test_an_admin_deactivates_a_member_but_not_themselves(admin_client, admin_user, member):
    client = Client()
    client.force_login(member)
    admin_client.post(f"/people/users/{member.pk}/active/", {"active": "0"})
    member.refresh_from_db()
    assert not member.is_active
    assert client.get("/").status_code == 302  # their session ended
    admin_client.post(f"/people/users/{admin_user.pk}/active/", {"active": "0"})
    admin_user.refresh_from_db()
    assert admin_user.is_active


def test_people_pages_are_for_admins_and_list_accounts(admin_client, member):
    member_client = Client()
    member_client.force_login(member)
    assert member_client.get("/people/").status_code == 403
    assert member_client.get("/people/groups/add/").status_code == 403
    page = admin_client.get("/people/").content.decode()
    assert "mia" in page and "Invite someone" in page and "Create a group" in page


def test_a_staff_admin_cannot_change_a_superuser(admin_client, django_user_model):
    owner = django_user_model.objects.create_superuser("owner", password="owner-pass-123")
    assert admin_client.get(f"/people/users/{owner.pk}/").status_code == 403
    admin_client.post(f"/people/users/{owner.pk}/active/", {"active": "0"})
    owner.refresh_from_db()
    assert owner.is_active


def test_the_root_form_offers_to_create_a_group(admin_client, library_dir):
    page = admin_client.get("/library/roots/add/").content.decode()
    assert "No groups exist yet." in page and "/people/groups/add/?next=" in page
