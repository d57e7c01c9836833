"""Every `docs/*.md#anchor` the code, the tests and the docs point to names a real heading.

Anchors follow GitHub's rules: the heading's text lower-cased, every character that is not a
letter, a digit, a space, `-` or `_` dropped, spaces turned into `-`, and a repeated heading
suffixed `-1`, `-2`, ... Headings inside fenced code blocks are not headings.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# `docs/name.md#anchor` anywhere: code comments, docstrings, .env.example, Markdown.
DOCS_REFERENCE = re.compile(r"\bdocs/([\w.-]+\.md)#([\w-]+)")
# A Markdown link into a file next to this one or into this file: `](name.md#anchor)`, `](#a)`.
MARKDOWN_LINK = re.compile(r"\]\(((?:\.\./)?(?:docs/)?[\w.-]+\.md)?#([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")


def slug(heading: str) -> str:
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(document: Path) -> frozenset[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    fence: str | None = None
    for line in document.read_text(encoding="utf-8").splitlines():
        opening = FENCE.match(line)
        if opening:
            if fence is None:
                fence = opening.group(1)
            elif opening.group(1) == fence:
                fence = None
            continue
        heading = HEADING.match(line) if fence is None else None
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def sources() -> list[Path]:
    files = [ROOT / "README.md", ROOT / ".env.example", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in ("src", "tests", "benchmarks", "scripts", "examples"):
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".md"})
    return [f for f in files if f != Path(__file__).resolve()]  # this file's are examples


def references(source: Path) -> list[tuple[Path, str]]:
    text = source.read_text(encoding="utf-8")
    found = [(ROOT / "docs" / name, anchor) for name, anchor in DOCS_REFERENCE.findall(text)]
    if source.suffix == ".md":
        for target, anchor in MARKDOWN_LINK.findall(text):
            found.append(((source.parent / target).resolve() if target else source, anchor))
    return found


def test_the_slug_follows_github() -> None:
    assert slug("Start-up checks") == "start-up-checks"
    assert slug("`POST /guard/verify`: the route") == "post-guardverify-the-route"
    assert slug("Cross-language: a dictionary restricted to the corpus") == (
        "cross-language-a-dictionary-restricted-to-the-corpus"
    )
    assert slug("py-rag API v1 (HTTP)") == "py-rag-api-v1-http"
    assert slug("证据 账本") == "证据-账本"


def test_a_repeated_heading_gets_a_numbered_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n## Notes\n```\n## Not a heading\n```\n## Notes\n")
    assert anchors(page) == {"title", "notes", "notes-1"}


def test_the_reference_scan_sees_links_and_plain_mentions(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("See [x](other.md#a-b), [y](#top) and docs/guard.md#stages.\n")
    assert references(page) == [
        (ROOT / "docs" / "guard.md", "stages"),
        (tmp_path / "other.md", "a-b"),
        (page, "top"),
    ]


def test_every_docs_anchor_resolves() -> None:
    broken = [
        f"{source.relative_to(ROOT)}: {_shown(target)}#{anchor}"
        for source in sources()
        for target, anchor in references(source)
        if not target.is_file() or anchor not in anchors(target)
    ]
    assert broken == []


def _shown(target: Path) -> str:
    return target.relative_to(ROOT).as_posix() if target.is_relative_to(ROOT) else str(target)
