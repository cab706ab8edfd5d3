"""The preview view for each kind of file: one page, its renderer from the
table of kinds, pictures through one asset URL, clear messages."""

import re

import lxml.html
import pytest

from mnote.library.models import Source
from tests import preview_files as files

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "make", "kind", "text"),
    [
        ("review.pptx", files.make_pptx, "pptx", "Mirror maintenance"),
        ("budget.xlsx", files.make_xlsx, "xlsx", "Mirror coating"),
        ("guide.epub", files.make_epub, "epub", "Reflectors"),
        ("report.odt", files.make_odt, "odt", "Observatory report"),
        ("menu.rtf", files.make_rtf, "rtf", "Observatory café menu"),
        ("pointing.py", files.make_code, "code", "hour_angle"),
        ("dome.html", files.make_html, "html", "Opening the dome"),
        ("notes.textpack", files.make_textpack, "textpack", "Dome notes"),
    ],
)
def test_it_previews_each_kind_with_blocks_to_locate(shelf, member_client, name, make, kind, text):
    source = shelf(name, make)
    response = member_client.get(f"/preview/{source.pk}/")

    assert response.status_code == 200
    page = response.content.decode()
    assert f'data-kind="{kind}"' in page and text in page and "data-block-index" in page
    assert "There is no preview" not in page


def test_it_serves_a_pictures_of_a_presentation_through_the_asset_url(shelf, member_client):
    source = shelf("review.pptx", files.make_pptx)
    page = member_client.get(f"/preview/{source.pk}/").content.decode()
    src = page.split('<img src="', 1)[1].split('"', 1)[0]

    picture = member_client.get(src)
    assert picture.status_code == 200 and picture["Content-Type"] == "image/png"
    assert picture.content.startswith(b"\x89PNG") and "sandbox" in picture["Content-Security-Policy"]
    assert member_client.get(f"/preview/{source.pk}/image/ppt/slides/slide1.xml").status_code == 404
    assert member_client.get(f"/preview/{source.pk}/image/../../etc/passwd.png").status_code == 404


def test_it_pages_a_big_sheet_and_refuses_a_bad_page_number_quietly(shelf, member_client):
    source = shelf("big.xlsx", lambda p: files.make_xlsx(p, rows=1_200))
    second = member_client.get(f"/preview/{source.pk}/?rows_page=2").content.decode()
    assert 'data-row="501"' in second and 'data-row="500"' not in second
    first = member_client.get(f"/preview/{source.pk}/?rows_page=nonsense").content.decode()
    assert 'data-row="1"' in first and "?rows_page=2" in first


def test_a_broken_file_gets_a_clear_message_not_an_error(shelf, member_client):
    source = shelf("broken.pptx", lambda p: p.write_bytes(b"PK\x03\x04 damaged"))
    response = member_client.get(f"/preview/{source.pk}/")
    assert response.status_code == 200
    assert "This file is not a valid PowerPoint presentation" in response.content.decode()


def test_a_kind_shown_as_original_only_says_so(shelf, member_client):
    source = shelf("scan.tiff", lambda p: p.write_bytes(b"II*\x00" + b"\0" * 64))
    page = member_client.get(f"/preview/{source.pk}/").content.decode()
    assert "open the original instead" in page


def test_an_image_file_is_shown_and_served_only_as_an_image(shelf, member_client):
    source = shelf("dome.png", lambda p: p.write_bytes(files.png_bytes()))
    page = member_client.get(f"/preview/{source.pk}/").content.decode()
    assert f"/preview/{source.pk}/image/file" in page
    served = member_client.get(f"/preview/{source.pk}/image/file")
    assert served["Content-Type"] == "image/png" and served["X-Content-Type-Options"] == "nosniff"


def test_the_words_a_renderer_adds_follow_the_readers_language(shelf, member_client):
    source = shelf("review.pptx", files.make_pptx)
    chinese = member_client.get(f"/preview/{source.pk}/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    english = member_client.get(f"/preview/{source.pk}/", HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9").content.decode()
    assert "演讲者备注" in chinese and "Speaker notes" not in chinese
    assert "Speaker notes" in english  # not the cached Chinese rendering


def test_a_citation_past_the_first_page_of_a_big_sheet_opens_its_page(shelf, member_client):
    import json
    from urllib.parse import quote

    source = shelf("big.xlsx", lambda p: files.make_xlsx(p, rows=3_000))
    locator = {"precision": "paragraph", "sourceId": source.pk, "evidenceText": "Consumable 2500\t7500"}
    page = member_client.get(f"/preview/{source.pk}/?locator={quote(json.dumps(locator))}").content.decode()
    assert 'data-row="2503"' in page and 'data-row="1"' not in page
    csv_source = shelf("log.csv", lambda p: p.write_text("".join(f"night {n},clear sky {n}\n" for n in range(6_000))))
    locator["evidenceText"] = "night 4321 clear sky 4321"
    page = member_client.get(f"/preview/{csv_source.pk}/?locator={quote(json.dumps(locator))}").content.decode()
    assert 'data-row="4322"' in page


def test_a_picture_with_spaces_and_any_script_in_its_name_is_served(shelf, member_client):
    from ebooklib import epub

    def make(path):
        book = epub.EpubBook()
        book.set_identifier("x")
        book.set_title("Names")
        book.add_item(
            epub.EpubItem(uid="i", file_name="images/夏目 #1.png", media_type="image/png", content=files.png_bytes())
        )
        chapter = epub.EpubHtml(title="One", file_name="one.xhtml")
        chapter.content = '<h1>One</h1><p><img src="images/%E5%A4%8F%E7%9B%AE%20%231.png" alt="portrait"/></p>'
        book.add_item(chapter)
        book.spine = [chapter]
        book.add_item(epub.EpubNcx())
        epub.write_epub(str(path), book)

    source = shelf("names.epub", make)
    page = member_client.get(f"/preview/{source.pk}/").content.decode()
    src = lxml.html.fromstring(page).xpath("//img[@alt='portrait']/@src")[0]
    assert "%20%231.png" in src
    assert member_client.get(src)["Content-Type"] == "image/png"


# --- removed and missing files, bad parameters: what each preview URL answers


def _body(response) -> str:
    return (b"".join(response.streaming_content) if response.streaming else response.content).decode()


@pytest.mark.parametrize("how", ["row removed", "file deleted"])
def test_every_preview_url_of_a_file_gone_from_the_library_says_so(shelf, member_client, library_dir, how):
    from tests.pdf_factory import make_pdf

    review = shelf("review.pptx", files.make_pptx)
    scan = shelf("scan.pdf", lambda p: make_pdf(p, [["Mirror coating log"]]))
    assert member_client.get(f"/preview/{review.pk}/").status_code == 200
    if how == "row removed":
        Source.objects.filter(pk__in=[review.pk, scan.pk]).update(status=Source.Status.REMOVED)
        status, message = 410, "This file is no longer in the library"
    else:
        (library_dir / "shelf" / "review.pptx").unlink()
        (library_dir / "shelf" / "scan.pdf").unlink()
        status, message = 404, "This file is missing"

    for url in (f"/preview/{review.pk}/", f"/preview/{review.pk}/original"):
        response = member_client.get(url)
        assert response.status_code == status, url
        assert message in _body(response), url
    for url, params in ((f"/preview/{review.pk}/anchor", {"evidence": "Mirror maintenance"}),
                        (f"/preview/{scan.pk}/find", {"evidence": "Mirror coating log"})):  # fmt: skip
        response = member_client.get(url, params)
        assert response.status_code == status, url
        assert response.json()["error"] == {"code": "gone", "message": response.json()["error"]["message"]}
        assert message in response.json()["error"]["message"]
    # A picture or page of a file that is gone is simply not there.
    assert member_client.get(f"/preview/{review.pk}/image/ppt/media/image1.png").status_code == 404
    assert member_client.get(f"/preview/{scan.pk}/page/1.png").status_code == 404


def test_an_unknown_source_is_a_404_on_every_preview_url(shelf, member_client):
    missing = Source.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    for suffix in ("", "original", "image/file", "page/1.png", "find?evidence=x", "anchor?evidence=x"):
        assert member_client.get(f"/preview/{missing + 1000}/{suffix}").status_code == 404, suffix


def test_the_anchor_and_find_urls_refuse_a_request_without_evidence_with_a_message(shelf, member_client):
    from tests.pdf_factory import make_pdf

    review = shelf("review.pptx", files.make_pptx)
    scan = shelf("scan.pdf", lambda p: make_pdf(p, [["Mirror coating log"]]))
    for url, params in [
        (f"/preview/{review.pk}/anchor", {}),
        (f"/preview/{review.pk}/anchor", {"evidence": "x" * 20_001}),
        (f"/preview/{review.pk}/anchor", {"evidence": "Mirror", "rows_page": "0"}),
        (f"/preview/{scan.pk}/find", {"evidence": "   "}),
        (f"/preview/{review.pk}/find", {"evidence": "Mirror maintenance"}),  # not a PDF
    ]:
        response = member_client.get(url, params)
        assert response.status_code == 400, (url, params)
        assert response.json()["error"]["code"] == "bad_request" and response.json()["error"]["message"], (url, params)
    # A PDF page of a file that is not a PDF does not exist.
    assert member_client.get(f"/preview/{review.pk}/page/1.png").status_code == 404


def test_the_anchor_url_finds_a_passage_of_the_rendered_preview(shelf, member_client):
    review = shelf("review.pptx", files.make_pptx)
    response = member_client.get(f"/preview/{review.pk}/anchor", {"evidence": "Mirror maintenance"})
    found = response.json()
    assert found["anchor"]["status"] == "exact" and found["version"]
    # Its own wall and CPU time, for the browser's resource timing (the accuracy bench reads them).
    assert re.fullmatch(r"anchor;dur=[0-9.]+, cpu;dur=[0-9.]+", response["Server-Timing"])
    absent = member_client.get(f"/preview/{review.pk}/anchor", {"evidence": "a sentence no slide holds at all"}).json()
    assert absent["anchor"] is None
