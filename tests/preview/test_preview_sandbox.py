"""No file can take the preview down: every kind renders in a limited child
process, a hostile file answers with a render or a clear refusal while the
web process keeps serving others, a sheet's pages come from one render, and
the pages that show nothing say why.

    .venv/bin/python -m pytest tests/preview/test_preview_sandbox.py -q
"""

import threading
import time

import httpx
import pytest

from mnote.library.models import IndexedRoot, Source
from mnote.library.text_size import HELD_BACK
from mnote.preview import render_child, sandbox
from mnote.preview.locator_anchor import text_map_of
from mnote.preview.text_map import build_text_map

pytestmark = pytest.mark.django_db

# A DOCTYPE whose internal subset never ends: a backtracking pattern over it takes exponential time.
REDOS_HTML = "<!DOCTYPE " + "[]" * 40 + "[\n<p>x</p>\n"


@pytest.fixture
def shelf(library_dir, settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"  # a fresh render cache
    folder = library_dir / "shelf"
    folder.mkdir()
    root = IndexedRoot.objects.create(name="Shelf", path="shelf")

    def add(name: str, content: str | bytes, **fields) -> Source:
        path = folder / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        fields.setdefault("status", "indexed")
        return Source.objects.create(root=root, relative_path=name, absolute_path=str(path), **fields)

    return add


@pytest.fixture
def child_runs(monkeypatch):
    """Every child process the preview starts, by operation."""
    runs = []
    real = sandbox.run_child

    def counted(script, op, *args, **kwargs):
        runs.append(op)
        return real(script, op, *args, **kwargs)

    monkeypatch.setattr(sandbox, "run_child", counted)
    return runs


@pytest.mark.django_db(transaction=True)
def test_a_hostile_html_answers_quickly_and_the_web_process_keeps_serving(shelf, live_server, member, client):
    """The 145-byte page whose DOCTYPE once made a backtracking regex hold
    every thread of the web process for minutes: it answers within seconds
    (read in the child), and the login page is served meanwhile."""
    source = shelf("doctype.html", REDOS_HTML)
    client.force_login(member)
    cookies = {"sessionid": client.cookies["sessionid"].value}
    answer = {}

    def open_hostile():
        started = time.monotonic()
        with httpx.Client(base_url=live_server.url, cookies=cookies, timeout=60) as http:
            answer["response"] = http.get(f"/preview/{source.pk}/")
        answer["seconds"] = time.monotonic() - started

    hostile = threading.Thread(target=open_hostile)
    hostile.start()
    with httpx.Client(base_url=live_server.url, timeout=30) as http:
        started = time.monotonic()
        login = http.get("/accounts/login/")
        login_seconds = time.monotonic() - started
    hostile.join()

    assert login.status_code == 200
    assert login_seconds < 2.0
    response = answer["response"]
    assert response.status_code == 200 and answer["seconds"] < 15
    page = response.text
    assert 'class="alert error"' in page or "data-block-index" in page


@pytest.fixture
def patient(monkeypatch):
    """What is tested is the paging, not the time: a busy machine gets longer than the product's 5 s."""
    monkeypatch.setattr(render_child, "TIMEOUT_S", 60)


def test_a_big_sheets_later_pages_come_from_its_one_render(shelf, member_client, child_runs, patient):
    rows = "\n".join(f"row {i},value {i}" for i in range(1, 1_201))
    source = shelf("big.csv", rows)

    first = member_client.get(f"/preview/{source.pk}/").content.decode()
    assert 'data-row="1"' in first and "?rows_page=3" in first
    assert child_runs == ["render"]
    second = member_client.get(f"/preview/{source.pk}/?rows_page=2").content.decode()
    third = member_client.get(f"/preview/{source.pk}/?rows_page=3").content.decode()
    assert 'data-row="501"' in second and 'data-row="500"' not in second
    assert "row 1200" in third
    assert child_runs == ["render"]  # pages 2 and 3 were made by the first render
    past = member_client.get(f"/preview/{source.pk}/?rows_page=9").content.decode()
    assert "Page 9 is not in this preview" in past and child_runs == ["render"]


def test_a_wide_sheet_opened_at_a_later_page_first_renders_once(shelf, member_client, child_runs, patient):
    wide = "\n".join(",".join(f"r{r}c{c}" for c in range(205)) for r in range(1, 601))
    source = shelf("wide.csv", wide)
    second = member_client.get(f"/preview/{source.pk}/?rows_page=2").content.decode()
    assert "r600c204" in second  # every column (a row shows up to 1,024)
    assert 'data-row="1"' in member_client.get(f"/preview/{source.pk}/").content.decode()
    assert child_runs == ["render"]


def test_a_picture_is_read_in_a_child_once_per_file_version(library_dir, settings, tmp_path, member_client, child_runs):
    from tests import preview_files

    settings.DATA_DIR = tmp_path / "data"
    (library_dir / "decks").mkdir()
    root = IndexedRoot.objects.create(name="Decks", path="decks")
    path = preview_files.make_pptx(library_dir / "decks" / "review.pptx")
    source = Source.objects.create(root=root, relative_path=path.name, absolute_path=str(path), status="indexed")
    page = member_client.get(f"/preview/{source.pk}/").content.decode()
    src = page.split('<img src="', 1)[1].split('"', 1)[0]

    first, again = member_client.get(src), member_client.get(src)
    assert first.status_code == again.status_code == 200 and again.content == first.content
    assert again.content.startswith(b"\x89PNG")
    missing = [member_client.get(f"/preview/{source.pk}/image/ppt/media/none.png").status_code for _ in range(2)]
    assert missing == [404, 404]
    assert child_runs == ["render", "asset", "asset"]  # the picture once, the missing part once


def test_a_file_held_back_by_the_text_size_limit_says_so(shelf, member_client):
    source = shelf(
        "huge.txt", "words " * 100, status=Source.Status.EXCLUDED,
        excluded_by=f"{HELD_BACK} (about 30 MB of text, more than MNOTE_MAX_TEXT_MB=20)",
    )  # fmt: skip
    response = member_client.get(f"/preview/{source.pk}/")
    page = response.content.decode()
    assert "text-size limit" in page and "An admin can reindex it" in page
    assert "no longer in the library" not in page
    download = member_client.get(f"/preview/{source.pk}/original")
    assert "text-size limit" in download.content.decode()


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("deep.html", "<html><body>" + "<div>" * 3000 + "deep text" + "</div>" * 3000 + "</body></html>", "nested deeper"),
        ("empty.txt", "", "This file is empty."),
    ],
)
def test_a_render_with_nothing_to_show_says_why(shelf, member_client, name, content, why):
    source = shelf(name, content)
    response = member_client.get(f"/preview/{source.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert why in page and 'class="alert error"' in page


def test_a_file_that_breaks_its_reader_gets_a_message_not_a_500(shelf, member_client):
    # An Outlook RTF with a NUL byte in its text: lxml refuses the string.
    source = shelf("message.rtf", b"{\\rtf1\\ansi Hello \x00 world\\par}")
    response = member_client.get(f"/preview/{source.pk}/")
    assert response.status_code == 200
    assert "Hello" in response.content.decode() or 'class="alert error"' in response.content.decode()


def test_the_preview_text_map_memo_holds_under_twenty_threads():
    compact = build_text_map('<p data-block-index="0">Mirror coating</p>').compact()
    versions = [f"5-{i:016x}" for i in range(12)]  # more than the memo keeps: it evicts all along
    errors = []
    start = threading.Barrier(20)

    def hammer(offset: int):
        start.wait()
        try:
            for i in range(300):
                version = versions[(i + offset) % len(versions)]
                assert text_map_of(version, {"textMap": compact}).version == version
        except Exception as e:  # noqa: BLE001 (any failure of any thread is the finding)
            errors.append(repr(e))

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_reader_stopped_by_the_clock_says_how_much_cpu_it_used(tmp_path):
    # A child that waits rather than works: the wall-clock limit stops it with
    # almost no CPU used, so the preview says "busy" and keeps no refusal.
    script = tmp_path / "waits.py"
    script.write_text("import time\ntime.sleep(30)\n")
    started = time.monotonic()
    with pytest.raises(sandbox.ChildFailed) as failed:
        sandbox.run_child(str(script), "render", "/dev/null", {}, timeout=0.5, memory=512 * 2**20)
    assert failed.value.reason == "timeout" and failed.value.cpu_s < 0.25
    assert time.monotonic() - started < 5


def test_a_busy_machine_is_remembered_a_short_while_only(shelf, member_client, monkeypatch):
    def stopped_by_the_clock(*args, **kwargs):
        raise sandbox.ChildFailed("timeout", cpu_s=0.1)

    source = shelf("notes.txt", "Mirror coating notes")
    with monkeypatch.context() as patch:
        patch.setattr(sandbox, "run_child", stopped_by_the_clock)
        patch.setattr(render_child, "BUSY_REMEMBERED_S", 0.2)
        assert "while the server is busy" in member_client.get(f"/preview/{source.pk}/").content.decode()
    assert "while the server is busy" in member_client.get(f"/preview/{source.pk}/").content.decode()  # remembered
    time.sleep(0.3)
    assert "Mirror coating notes" in member_client.get(f"/preview/{source.pk}/").content.decode()
