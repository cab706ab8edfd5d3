"""The Simplified Chinese translation: a complete, compiled catalogue whose
placeholders match, pages that follow the browser's language, and the
language switcher. The JSON API stays English (it is for agents).

    nice .venv/bin/python -m pytest -q tests/pages/test_translation.py
"""

import ast
import gettext
import json
import re
from pathlib import Path

import httpx
import pytest

from mnote.library.models import IndexedRoot, Source
from tests.paths import REPO_DIR

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

LOCALE_DIR = REPO_DIR / "locale" / "zh_Hans" / "LC_MESSAGES"
PO_FILE = LOCALE_DIR / "django.po"
MO_FILE = LOCALE_DIR / "django.mo"
CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}
DOCUMENTS = "documents_paginated_after_delete.json"
# Named (%(name)s) and positional (%s, %d) placeholders; "%%" is a literal percent sign.
PLACEHOLDER = re.compile(r"%(?:\([^)]+\))?[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc]")


def read_po(path: Path) -> list[dict]:
    """The catalogue's entries, each {"flags", "msgctxt", "msgid", "msgid_plural", "msgstr": {index: text}}.
    Enough of the PO format for what makemessages writes; obsolete (#~) entries are skipped."""
    entries, entry, key = [], None, None

    def finish():
        if entry is not None and "msgid" in entry:
            entries.append(entry)

    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line:
            finish()
            entry, key = None, None
            continue
        if line.startswith("#~"):
            continue
        if entry is None:
            entry = {"flags": set(), "msgctxt": None, "msgid_plural": None, "msgstr": {}}
        if line.startswith("#,"):
            entry["flags"].update(flag.strip() for flag in line[2:].split(","))
            continue
        if line.startswith("#"):
            continue
        match = re.match(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(".*")$', line)
        if match:
            name, index, literal = match.groups()
            if name.startswith("msgstr"):
                key = ("msgstr", int(index or 0))
                entry["msgstr"][key[1]] = ast.literal_eval(literal)
            else:
                key = (name, None)
                entry[name] = ast.literal_eval(literal)
            continue
        if line.startswith('"') and key is not None:
            if key[0] == "msgstr":
                entry["msgstr"][key[1]] += ast.literal_eval(line)
            else:
                entry[key[0]] += ast.literal_eval(line)
            continue
        raise AssertionError(f"unexpected line in {path.name}: {raw!r}")
    finish()
    return entries


@pytest.fixture(scope="module")
def catalogue():
    entries = read_po(PO_FILE)
    header = next(e for e in entries if e["msgid"] == "")
    return header, [e for e in entries if e["msgid"] != ""]


def test_it_has_a_chinese_header_with_one_plural_form(catalogue):
    header, _messages = catalogue
    assert "fuzzy" not in header["flags"]
    text = header["msgstr"][0]
    assert "Language: zh_Hans\n" in text
    assert "Plural-Forms: nplurals=1; plural=0;\n" in text
    assert "charset=UTF-8" in text


def test_it_translates_every_message_and_leaves_none_fuzzy(catalogue):
    _header, messages = catalogue
    assert len(messages) > 250
    fuzzy = [e["msgid"] for e in messages if "fuzzy" in e["flags"]]
    untranslated = [e["msgid"] for e in messages if not e["msgstr"] or not all(s.strip() for s in e["msgstr"].values())]
    assert fuzzy == []
    assert untranslated == []
    # One plural form in Chinese: msgstr[0] and nothing more.
    for entry in messages:
        assert sorted(entry["msgstr"]) == [0], entry["msgid"]


def test_it_keeps_the_placeholders_of_every_message(catalogue):
    _header, messages = catalogue
    wrong = []
    for entry in messages:
        sources = [entry["msgid"]] + ([entry["msgid_plural"]] if entry["msgid_plural"] else [])
        wanted = [sorted(PLACEHOLDER.findall(s.replace("%%", ""))) for s in sources]
        for text in entry["msgstr"].values():
            found = sorted(PLACEHOLDER.findall(text.replace("%%", "")))
            if found not in wanted:
                wrong.append((entry["msgid"], text))
    assert wrong == []


def test_it_has_a_compiled_catalogue_in_step_with_the_po(catalogue):
    _header, messages = catalogue
    with MO_FILE.open("rb") as f:
        compiled = gettext.GNUTranslations(f)
    stale = []
    for entry in messages:
        if entry["msgctxt"] is not None:
            continue
        if entry["msgid_plural"]:
            got = compiled.ngettext(entry["msgid"], entry["msgid_plural"], 1)
        else:
            got = compiled.gettext(entry["msgid"])
        if got != entry["msgstr"][0]:
            stale.append(entry["msgid"])
    assert stale == [], "run: manage.py compilemessages --ignore=.venv --ignore=.venv-lightrag"


def test_it_shows_the_login_page_in_chinese_to_a_chinese_browser(client):
    html = client.get("/accounts/login/", **CHINESE).content.decode()
    assert '<html lang="zh-hans">' in html
    assert "登录 MNote 资料库" in html
    assert "用户名" in html and "密码" in html
    assert "Log in to MNote Library" not in html


def test_it_shows_the_login_page_in_english_to_an_english_browser(client):
    html = client.get("/accounts/login/", **ENGLISH).content.decode()
    assert '<html lang="en">' in html
    assert "Log in to MNote Library" in html


def test_it_shows_the_dashboard_in_chinese(client, admin_user, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/documents/paginated", DOCUMENTS)
    client.force_login(admin_user)
    response = client.get("/", **CHINESE)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<html lang="zh-hans">' in html
    assert ">搜索</a>" in html and ">提问</a>" in html
    assert "来源" in html and "重排序" in html and "退出登录" in html
    assert "Needs attention" not in html and "需要处理" in html
    assert "MNote 登记表中有 0 个来源，" in html and "0 个索引根目录。" in html


def test_it_shows_a_members_home_in_chinese(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    html = member_client.get("/", **CHINESE).content.decode()
    assert "搜索资料库，或提出问题…" in html and "你最近的问题" in html and "最近的引用" in html
    assert "你可见的文件夹中有 0 个文件" in html


def test_it_shows_the_search_page_in_chinese(member_client):
    html = member_client.get("/search/", **CHINESE).content.decode()
    assert '<html lang="zh-hans">' in html
    assert ">搜索</a>" in html
    assert "搜索资料库…" in html
    assert "全库" in html and "工作区" in html and "范围与检索方式" in html


def test_it_tells_in_chinese_why_a_matching_file_cannot_be_cited(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", httpx.ConnectError("Connection refused"))
    root = IndexedRoot.objects.create(name="Manuals", path="manuals")
    Source.objects.create(root=root, relative_path="mirror-log.md", absolute_path="/l/m.md", status="failed")
    html = member_client.get("/search/?q=mirror&mode=library", **CHINESE).content.decode()
    assert "LightRAG 不可用，目前无法搜索全库。" in html
    assert "此文件名与搜索匹配，但 LightRAG 无法引用它：LightRAG 索引失败。" in html


def test_it_keeps_the_json_api_in_english_for_a_chinese_browser(member_client, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json").on("POST", "/query/data", "query_data_naive.json")
    root = IndexedRoot.objects.create(name="Manuals", path="manuals")
    Source.objects.create(root=root, relative_path="mirror-log.md", absolute_path="/l/m.md", status="failed")
    response = member_client.post(
        "/api/search", json.dumps({"query": "mirror coating"}), content_type="application/json", **CHINESE
    )
    assert response.status_code == 200
    assert [row["reason"] for row in response.json()["notInLightRAG"]] == ["LightRAG failed to index it"]


def test_it_switches_an_english_browser_to_chinese_with_the_switcher(member_client):
    assert ">Search</a>" in member_client.get("/search/", **ENGLISH).content.decode()
    response = member_client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/search/"}, **ENGLISH)
    assert response.status_code == 302 and response["Location"] == "/search/"
    html = member_client.get("/search/", **ENGLISH).content.decode()
    assert '<html lang="zh-hans">' in html
    assert ">搜索</a>" in html
    # ...and back.
    member_client.post("/i18n/setlang/", {"language": "en", "next": "/search/"}, **ENGLISH)
    assert '<html lang="en">' in member_client.get("/search/", **CHINESE).content.decode()
