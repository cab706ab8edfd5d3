"""Who may call the JSON API: sessions (with CSRF) and API tokens (without),
JSON 401s instead of login redirects, the token command and its admin page.

    nice .venv/bin/python -m pytest tests/api/test_api_auth.py
"""

import hashlib
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.middleware.csrf import _get_new_csrf_string
from django.test import Client

from mnote.api.models import ApiToken

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ENDPOINTS = [
    ("get", "/api/status"),
    ("post", "/api/search"),
    ("post", "/api/query"),
    ("post", "/api/open-reference"),
    ("get", "/api/sources/1/chunks?chunk_index=0"),
    ("post", "/api/admin/ingest"),
    ("post", "/api/admin/delete-source"),
    ("post", "/api/admin/prune-registry"),
    ("post", "/api/admin/retry-failed"),
]


def bearer(key: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_it_answers_401_json_without_auth_instead_of_redirecting(client, fake_lightrag, method, url):
    response = getattr(client, method)(url)
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "unauthorized"
    assert fake_lightrag.requests == []


def test_it_accepts_a_token_and_skips_the_csrf_check(admin_user):
    _, key = ApiToken.objects.create_token(admin_user, "agent")
    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/api/admin/prune-registry", "{}", content_type="application/json", **bearer(key))
    assert response.status_code == 200 and response.json() == {"pruned": 0}
    assert ApiToken.objects.get().last_used_at is not None


def test_it_refuses_a_session_post_without_a_csrf_token(admin_user):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    response = strict.post("/api/admin/prune-registry", "{}", content_type="application/json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "csrf_failed"


def test_it_accepts_a_session_post_with_a_csrf_token(admin_user):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    secret = _get_new_csrf_string()
    strict.cookies["csrftoken"] = secret
    response = strict.post("/api/admin/prune-registry", "{}", content_type="application/json", HTTP_X_CSRFTOKEN=secret)
    assert response.status_code == 200


def test_it_refuses_unknown_and_revoked_tokens(member):
    token, key = ApiToken.objects.create_token(member)
    assert Client().get("/api/openapi.json", **bearer("mnote_wrong")).status_code == 200  # public
    assert Client().post("/api/admin/prune-registry", **bearer("mnote_wrong")).status_code == 401
    token.delete()
    response = Client().get("/api/status", **bearer(key))
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")


def test_it_refuses_the_token_of_an_inactive_user(member, fake_lightrag):
    _, key = ApiToken.objects.create_token(member)
    member.is_active = False
    member.save()
    response = Client().get("/api/status", **bearer(key))
    assert response.status_code == 401
    assert fake_lightrag.requests == []


def test_it_gives_a_token_its_users_role(member):
    _, key = ApiToken.objects.create_token(member)
    response = Client().post("/api/admin/prune-registry", "{}", content_type="application/json", **bearer(key))
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


def test_it_prefers_the_token_over_the_session(admin_user, member):
    _, key = ApiToken.objects.create_token(member)
    client = Client()
    client.force_login(admin_user)
    response = client.post("/api/admin/prune-registry", "{}", content_type="application/json", **bearer(key))
    assert response.status_code == 403


# --- the command and the admin page ------------------------------------------


def test_it_creates_a_token_and_stores_only_its_hash(member):
    out = io.StringIO()
    call_command("create_api_token", "mia", "--name", "research agent", stdout=out, stderr=io.StringIO())
    key = out.getvalue().strip()
    token = ApiToken.objects.get()
    assert token.name == "research agent" and token.user == member
    assert token.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key.startswith(token.prefix) and key not in json.dumps(list(ApiToken.objects.values()), default=str)
    assert ApiToken.objects.authenticate(key) == token


def test_it_refuses_to_create_a_token_for_an_unknown_or_inactive_user(member):
    with pytest.raises(CommandError, match="No user"):
        call_command("create_api_token", "nobody", stdout=io.StringIO())
    member.is_active = False
    member.save()
    with pytest.raises(CommandError, match="inactive"):
        call_command("create_api_token", "mia", stdout=io.StringIO())
    assert not ApiToken.objects.exists()


def test_it_lists_tokens_in_the_admin_with_a_read_only_key(client, admin_user, member):
    token, _ = ApiToken.objects.create_token(member, "agent")
    client.force_login(admin_user)
    assert client.get("/admin/api/apitoken/").status_code == 200
    page = client.get(f"/admin/api/apitoken/{token.pk}/change/").content.decode()
    assert token.key_hash in page and 'name="key_hash"' not in page
    assert client.get("/admin/api/apitoken/add/").status_code == 403


def test_it_answers_a_form_post_with_a_json_error_not_a_crash(member):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(member)
    secret = _get_new_csrf_string()
    strict.cookies["csrftoken"] = secret
    response = strict.post("/api/search", {"query": "mirror", "csrfmiddlewaretoken": secret})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_json"
