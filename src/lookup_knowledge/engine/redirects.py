"""Pages that only say where their text went: a redirect to another page of the same corpus.

Documentation moves, and the old file often stays behind with one line: "This alert has
been moved to [alerts/…/KubeAPIDown.md](https://github.com/…/KubeAPIDown.md)". Such a page
holds its topic's title and nothing else, so a question naming the topic finds it first (a
short page, the whole title) and the agent gets a pointer instead of the runbook. When the
page it points to is in the corpus, the stub is left out of the index: the page it names
answers in its place (docs/retrieval.md#chunking).

A redirect is a document whose text, links aside, is at most `STUB_MAX_WORDS` words, and that
holds exactly one link, whose path (a URL's path, or a relative link resolved against the
page's folder) is another document's source or ends with it. A page that links outside the
corpus (`More information in [blog](https://…)`) stays: it is the best the corpus has.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

from lookup_knowledge.engine.markdown import Document

STUB_MAX_WORDS = 12  # "This alert has been moved to", "Moved, see", "本页已迁移到"
STUB_MAX_CHARS = 600  # a dozen words and one link, however long its URL
# A Markdown link or image `[text](target "title")`, an autolink `<https://…>`, a bare URL.
_LINK = re.compile(r"!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|<(\w+://[^>\s]+)>")
_BARE_URL = re.compile(r"\b\w+://[^\s)\]>]+")
_WORD = re.compile(r"[^\W_]+")


def redirects(documents: Sequence[Document]) -> dict[int, int]:
    """The documents that only point to another one of `documents`: position → target."""
    by_source = {d.source: n for n, d in enumerate(documents)}
    found: dict[int, int] = {}
    for number, document in enumerate(documents):
        target = _target(document)
        if target is None:
            continue
        resolved = _resolve(document.source, target)
        match = _document_at(resolved, by_source)
        if match is not None and match != number:
            found[number] = match
    # A stub that points to another stub keeps its text: only a page that answers may stand
    # in for one (and two stubs pointing at each other both stay).
    return {stub: target for stub, target in found.items() if target not in found}


def _target(document: Document) -> str | None:
    """The one link of a page that says nothing else, or None."""
    if len(document.chunks) != 1 or len(document.chunks[0].content) > STUB_MAX_CHARS:
        return None  # no page of a dozen words and a link is longer
    text = document.chunks[0].content
    links = [m.group(2) or m.group(3) for m in _LINK.finditer(text)]
    rest = _LINK.sub(" ", text)
    links += _BARE_URL.findall(rest)
    rest = _BARE_URL.sub(" ", rest)
    if len(links) != 1 or len(_WORD.findall(rest)) > STUB_MAX_WORDS:
        return None
    return links[0]


def _resolve(source: str, target: str) -> str:
    """A link's path: a URL's path, or a relative link resolved against the page's folder."""
    parts = urlsplit(target)
    path = unquote(parts.path)
    if parts.scheme or parts.netloc or path.startswith("/"):
        return path.lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(source), path))


def _document_at(path: str, by_source: dict[str, int]) -> int | None:
    """The document whose source is `path`, or the longest one `path` ends with."""
    if path in by_source:
        return by_source[path]
    best: tuple[int, int] | None = None
    for source, number in by_source.items():
        if path.endswith("/" + source) and (best is None or len(source) > best[0]):
            best = (len(source), number)
    return None if best is None else best[1]
