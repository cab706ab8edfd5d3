"""The library the question set (bench/questions/) is asked of, built from
real documentation nobody here wrote, the way a team keeps it.

    .venv/bin/python bench/question_library.py DIR

Fetches Debian's ``debian-handbook`` package (``apt-get download`` +
``dpkg-deb -x``, nothing installed), takes some sections of its en-US and
zh-CN HTML (disjoint topics, so an English question has one right file and a
Chinese one another) and writes each as a team would keep it: Markdown (the
section's headings, paragraphs, lists and command examples), every fourth as
plain text. The demo library (mnote/demo/library) is copied beside it.

The gold passages in the question files are verbatim spans of these converted
files; ``check(dir)`` says which are not found (run after changing the
conversion).
"""

from __future__ import annotations

import glob
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
DEMO_DIR = REPO_DIR / "mnote" / "demo" / "library"
PACKAGE = "debian-handbook"
HTML_DIR = "usr/share/doc/debian-handbook/html"

# Sections by language: the zh-CN ones are those its translators finished
# (mostly Chinese text); the en-US ones are other topics.
SECTIONS = {
    "en-US": [
        "sect.apparmor", "sect.selinux", "sect.firewall-packet-filtering", "sect.quotas",
        "sect.task-scheduling-cron-atd", "sect.asynchronous-task-scheduling-anacron", "sect.shell-environment",
        "sect.config-printing", "sect.config-bootloader", "sect.kernel-compilation", "sect.dhcp",
        "sect.domain-name-servers", "sect.windows-file-server-with-samba", "sect.http-ftp-proxy",
        "sect.monitoring", "sect.supervision", "sect.x509-cert", "sect.virtual-private-network", "sect.ipv6",
        "sect.power-management", "sect.filesystem-hierarchy", "sect.automatic-upgrades", "sect.apt-cache",
        "sect.package-authentication", "sect.creating-accounts", "sect.quality-of-service",
    ],
    "zh-CN": [
        "sect.apt-get", "sect.becoming-package-maintainer", "sect.common-procedures", "sect.foundation-documents",
        "sect.http-web-server", "sect.installation-steps", "sect.network-config", "sect.release-lifecycle",
        "sect.remote-login", "sect.virtualization", "sect.hotplug", "sect.nfs-file-server",
        "sect.user-group-databases", "sect.syslog", "sect.setup-apt-package-repository",
        "sect.hostname-name-service", "sect.backup", "sect.dist-upgrade", "sect.how-to-migrate", "sect.why-debian",
        "sect.regular-upgrades", "sect.administration-interfaces",
    ],
}
XHTML = "{http://www.w3.org/1999/xhtml}"


def fetch(work: Path) -> Path:
    """The unpacked package's HTML folder (downloaded once into ``work``)."""
    html = work / "x" / HTML_DIR
    if html.is_dir():
        return html
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", PACKAGE], cwd=work, check=True, capture_output=True)
    deb = sorted(glob.glob(str(work / f"{PACKAGE}_*.deb")))[-1]
    subprocess.run(["dpkg-deb", "-x", deb, str(work / "x")], check=True)
    return html


def _text(element) -> str:
    return " ".join("".join(element.itertext()).split())


def section_markdown(path: Path) -> str:
    """A handbook section as Markdown: headings, paragraphs, list items and
    examples, in document order; the navigation and index anchors left out."""
    from lxml import html as lxml_html

    root = lxml_html.parse(str(path)).getroot()
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.startswith(XHTML):
            el.tag = el.tag[len(XHTML):]
    body = root.find(".//div[@class='section']")
    if body is None:
        body = root.find(".//body")
    lines: list[str] = []
    done: set = set()

    def walk(el) -> None:
        for child in el:
            if not isinstance(child.tag, str) or child in done:
                continue
            tag, cls = child.tag, child.get("class") or ""
            if tag in ("h1", "h2", "h3", "h4", "h5"):
                lines.append("#" * int(tag[1]) + " " + _text(child))
            elif tag == "pre":
                lines.append("```\n" + "".join(child.itertext()).strip("\n") + "\n```")
            elif tag == "div" and cls.split()[:1] == ["para"]:
                # a paragraph may hold lists or examples: its own text first
                nested = [c for c in child if isinstance(c.tag, str) and c.tag in ("ul", "ol", "pre", "div", "table")]
                if nested:
                    own = [child.text or ""]
                    for c in child:
                        if c in nested:
                            break
                        own.append("".join(c.itertext()) + (c.tail or ""))
                    if " ".join("".join(own).split()):
                        lines.append(" ".join("".join(own).split()))
                    walk(child)
                elif _text(child):
                    lines.append(_text(child))
            elif tag == "li":
                lines.append("- " + _text(child))
            elif tag == "table":
                for row in child.iter("tr"):
                    lines.append("| " + " | ".join(_text(c) for c in row if c.tag in ("td", "th")) + " |")
            elif tag == "a":
                continue
            else:
                walk(child)

    walk(body)
    return "\n\n".join(line for line in lines if line.strip()) + "\n"


def build(dest: Path, work: Path | None = None) -> list[str]:
    """Write the library into ``dest`` (``handbook/<lang>/…`` and ``demo/…``);
    return the library paths written."""
    work = work or Path(tempfile.gettempdir()) / "mnote-question-library"
    html = fetch(work)
    written = []
    for lang, names in SECTIONS.items():
        folder = dest / "handbook" / lang
        folder.mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(names):
            suffix = ".txt" if i % 4 == 3 else ".md"
            target = folder / (name.removeprefix("sect.") + suffix)
            target.write_text(section_markdown(html / lang / f"{name}.html"), encoding="utf-8")
            written.append(target.relative_to(dest).as_posix())
    if not (dest / "demo").exists():
        shutil.copytree(DEMO_DIR, dest / "demo")
    written += sorted(p.relative_to(dest).as_posix() for p in (dest / "demo").rglob("*") if p.is_file())
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for rel in build(out):
        print(rel)
