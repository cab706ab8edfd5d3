"""Indexing progress: per root done/total, each file's stage, an estimate of
the time left from the recent pace, live on the home page.

    .venv/bin/python -m pytest -q tests/library/test_progress.py
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from mnote.library.models import IndexedRoot, Source
from mnote.library.progress import file_stage, root_progress

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
S = Source.Status


@pytest.fixture
def papers(library_dir):
    (library_dir / "papers").mkdir()
    return IndexedRoot.objects.create(name="Papers", path="papers")


def add(root, name, status, **fields):
    return Source.objects.create(root=root, relative_path=name, absolute_path=f"/x/{name}", status=status, **fields)


def test_each_file_has_a_stage_and_the_root_counts_done_of_total(papers):
    now = timezone.now()
    for n in range(4):
        add(papers, f"done{n}.md", S.INDEXED, indexed_at=now - timedelta(seconds=30 * n))
    add(papers, "bad.pdf", S.FAILED)
    queued = add(papers, "q.md", S.QUEUED)
    sent = add(papers, "s.md", S.INDEXING, progress="pending")
    parsing = add(papers, "p.md", S.INDEXING, progress="processing · 3 chunks")
    add(papers, "gone.md", S.REMOVED)
    assert [file_stage(s) for s in (queued, sent, parsing)] == ["queued", "sent", "parsing"]

    progress = root_progress(papers)
    assert (progress.done, progress.total, progress.on_the_way) == (5, 8, 3)
    # Four files in 90 s: 30 s a file, three to go.
    assert progress.eta_seconds == pytest.approx(90, abs=1)
    assert progress.log_line() == "4 of 8 files indexed, 1 failed; on the way: 1 queued, 1 sent, 1 parsing (about 2 min left)"
    assert {s.relative_path: s.stage for s in progress.files} == {"q.md": "queued", "s.md": "sent", "p.md": "parsing"}


def test_without_a_recent_pace_it_says_it_is_estimating(member_client, papers, fake_lightrag):
    add(papers, "q.md", S.QUEUED)
    assert root_progress(papers).eta_seconds is None
    fake_lightrag.on("GET", "/health", "health.json")
    page = member_client.get("/").content.decode()
    assert "0 of 1 files done" in page and "estimating the time left" in page
    assert 'hx-get="/library/progress/?root=' in page


def test_the_panel_ends_on_done_and_stops_polling(member_client, papers):
    source = add(papers, "q.md", S.QUEUED)
    url = f"/library/progress/?root={papers.pk}"
    assert 'hx-trigger="every 3s"' in member_client.get(url, headers={"HX-Request": "true"}).content.decode()
    source.status, source.indexed_at = S.INDEXED, timezone.now()
    source.save()
    done = member_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "1 of 1 files done" in done and "Indexing finished" in done and "every 3s" not in done


def test_a_member_sees_no_progress_of_a_root_they_may_not_see(member_client, papers, fake_lightrag):
    fake_lightrag.on("GET", "/health", "health.json")
    papers.visible_to_all = False
    papers.save()
    add(papers, "secret.md", S.QUEUED)
    assert "secret.md" not in member_client.get(f"/library/progress/?root={papers.pk}").content.decode()
    assert "secret.md" not in member_client.get("/").content.decode()


def test_recently_cited_snippets_start_and_end_on_whole_words_without_table_syntax():
    from mnote.text.snippet import snippet

    quote = "ration of the frames.\n| Filter | Frames |\n|---|:---:|\n| R | 20 |\n## Twilight **sky** flats " + "word " * 40
    text = snippet(quote, 110)
    assert text.startswith("…of the frames. Filter · Frames R · 20 Twilight sky flats")
    assert "|" not in text and "---" not in text and "#" not in text and "**" not in text
    assert text.endswith("word…") and len(text) <= 111
    assert snippet("平场帧应在黄昏时拍摄。") == "平场帧应在黄昏时拍摄。"
