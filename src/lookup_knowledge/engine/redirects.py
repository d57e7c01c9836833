"""Pages that only say where their text went: a redirect to another page of the same corpus.

Documentation moves, and the old file often stays behind with one line: "This alert has
been moved to [alerts/…/KubeAPIDown.md](https://github.com/…/KubeAPIDown.md)". Such a page
holds its topic's name and nothing else, so a question naming the topic finds it first (a
short page, the whole title), graded 1.0, and the agent gets a pointer instead of the
runbook. When the page it points to is in the corpus, the stub is not indexed and the page
it names answers in its place; a stub whose title differs from its target's (a renamed
page) lends the target its old name, so a question that still says it finds the page
(docs/retrieval.md#chunking).

A stub is a document whose text is short (`STUB_MAX_CHARS`, and at most `STUB_MAX_WORDS`
words besides its one link, a Chinese character counting as half a word) and holds exactly
one link. The link names a page of the corpus when:

* it is relative (`../cluster-kube-apiserver-operator/KubeAPIDown.md`): resolved against the
  stub's folder, it is that page's source, exactly;
* or it is a URL or a path from a root the corpus does not know (`https://github.com/…/
  alerts/cluster-kube-apiserver-operator/KubeAPIDown.md`): its last path segments are one
  page's source and no other's, at least that page's folder and file name (or its file name,
  for a page at the corpus root), and the stub's title is that page's title or file name.
  A link to another site's page that merely ends the same way is no redirect.

A page that links out of the corpus stays (`More information in [blog](https://…)` is the
best the corpus has on its topic), and so do a stub whose target is a stub, and a stub whose
target has nothing indexed.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from lookup_knowledge.engine.markdown import Document

STUB_MAX_CHARS = 600  # a dozen words and one link, however long its URL
STUB_MAX_WORDS = 12  # "This alert has been moved to", "Moved, see", "本页已迁移到新的位置"
# A Markdown link or image `[text](target "title")`, or an autolink `<https://…>`.
_LINK = re.compile(r"!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|<(\w+://[^>\s]+)>")
_BARE_URL = re.compile(r"\b\w+://[^\s)\]>]+")
_LATIN_WORD = re.compile(r"[^\W\d_\u3400-\u9fff\uf900-\ufaff]+|\d+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True, slots=True)
class Redirects:
    """The stubs of a corpus: document position → the position of the page it points to."""

    targets: dict[int, int]

    def aliases(self, documents: Sequence[Document]) -> dict[int, tuple[str, ...]]:
        """Each target's old names: the titles of its stubs that differ from its own."""
        found: dict[int, list[str]] = {}
        for stub, target in self.targets.items():
            title = documents[stub].title
            if _key(title) != _key(documents[target].title):
                found.setdefault(target, []).append(title)
        return {target: tuple(titles) for target, titles in found.items()}


def redirects(documents: Sequence[Document], indexed: Callable[[Document], bool]) -> Redirects:
    """The documents that only point to another one of `documents` that has something
    `indexed` (a chunk that is no placeholder)."""
    by_source = {d.source: n for n, d in enumerate(documents)}
    by_tail: dict[tuple[str, ...], list[int]] = {}  # last two path segments → documents
    for number, document in enumerate(documents):
        by_tail.setdefault(tuple(document.source.split("/")[-2:]), []).append(number)
    found: dict[int, int] = {}
    for number, document in enumerate(documents):
        link = _only_link(document)
        if link is None:
            continue
        target = _target(document, link, documents, by_source, by_tail)
        if target is not None and target != number and indexed(documents[target]):
            found[number] = target
    # A stub that points to another stub keeps its text: only a page that answers may stand
    # in for one (and two stubs pointing at each other both stay).
    return Redirects({stub: target for stub, target in found.items() if target not in found})


def _only_link(document: Document) -> str | None:
    """The one link of a page that says nothing else, or None."""
    if sum(len(c.content) for c in document.chunks) > STUB_MAX_CHARS or not document.chunks:
        return None
    text = "\n".join(c.content for c in document.chunks)
    links = [m.group(2) or m.group(3) for m in _LINK.finditer(text)]
    rest = _LINK.sub(" ", text)
    links += _BARE_URL.findall(rest)
    rest = _BARE_URL.sub(" ", rest)
    words = len(_LATIN_WORD.findall(rest)) + len(_CJK.findall(rest)) / 2
    if len(links) != 1 or words > STUB_MAX_WORDS:
        return None
    return links[0]


def _target(
    stub: Document,
    link: str,
    documents: Sequence[Document],
    by_source: dict[str, int],
    by_tail: dict[tuple[str, ...], list[int]],
) -> int | None:
    """The page a stub's link names, or None."""
    parts = urlsplit(link)
    path = unquote(parts.path)
    if not path:
        return None  # `#section`: a place on the stub itself
    if not (parts.scheme or parts.netloc or path.startswith("/")):  # relative: exactly a page
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(stub.source), path))
        return by_source.get(resolved)
    segments = [s for s in path.split("/") if s]
    # The page whose source the path ends with (the longest, should several); its folder and
    # file name at least, as `by_tail` holds them.
    ending = [
        n
        for n in (*by_tail.get(tuple(segments[-2:]), ()), *by_tail.get(tuple(segments[-1:]), ()))
        if _ends_with(segments, documents[n].source.split("/"))
    ]
    if not ending:
        return None
    number = max(ending, key=lambda n: documents[n].source.count("/"))
    target = documents[number]
    stem = target.source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    # Another site's page may end the same way: the stub must be named as the page is.
    return number if _key(stub.title) in (_key(target.title), _key(stem)) else None


def _ends_with(segments: list[str], source: list[str]) -> bool:
    return len(source) <= len(segments) and segments[len(segments) - len(source) :] == source


def _key(name: str) -> str:
    """A name compared without case, spaces or punctuation (`Kube API Down` = `KubeAPIDown`)."""
    return re.sub(r"[\W_]+", "", name).casefold()
