"""Pages that only say where their text went: a redirect to another page of the same corpus.

Documentation moves, and the old file often stays behind with one line: "This alert has
been moved to [alerts/…/KubeAPIDown.md](https://github.com/…/KubeAPIDown.md)". Such a page
holds its topic's name and nothing else, so a question naming the topic finds it first (a
short page, the whole title), graded 1.0, and the agent gets a pointer instead of the
runbook. When the page it points to is in the corpus, the stub is not indexed and the page
it names answers in its place; a stub whose title differs from its target's (a renamed
page) lends the target its old name, so a question that still says it finds the page
(docs/retrieval.md#chunking).

A stub is a page that is not a folder's index (`_index.md`, `index.md`, `README.md`) and
whose text is exactly one link and a few words that only say where to look (the lexicon's
pointer words, `data/pointers.txt`: `This alert has been moved to`, `See`, `Renamed:`,
`本页已迁移到`; at most `STUB_MAX_WORDS`). A page that says anything else besides its link
(`Run systemctl restart kubelet. See also [kubelet logs](…)`) has text of its own and
stays. The link is a
Markdown link (`[text](target)`, `[text](<a target>)`, `[text][1]` with its definition),
an autolink, a bare URL, or a Hugo `ref` / `relref` shortcode. It names a page of the
corpus when:

* it is relative (`../cluster-kube-apiserver-operator/KubeAPIDown.md`, `ref
  "./NodeRAIDDegraded.md"`): resolved against the stub's folder, it is that page's source,
  exactly (a Hugo `ref` may also name a source from the corpus root);
* or it is a URL or a path from a root the corpus does not know (`https://github.com/…/
  alerts/cluster-kube-apiserver-operator/KubeAPIDown.md`): it ends like exactly one page's
  source does, over that page's folder and file name at least (or its file name, for a page
  at the corpus root), and the stub is named as that page is (its title or file name).
  Another site's page that merely ends the same way is no redirect.

A page that links out of the corpus stays (`More information in [blog](https://…)` is the
best the corpus has on its topic), and so do a stub whose target is a stub, and a stub whose
target has nothing indexed.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from lookup_knowledge.engine import tokenize
from lookup_knowledge.engine.markdown import Document

STUB_MAX_CHARS = 600  # a dozen words and one link, however long its URL
STUB_MAX_WORDS = 12  # "This alert has been moved to", "Moved, see", "本页已迁移到新的位置"
FOLDER_PAGES = frozenset({"_index.md", "index.md", "readme.md", "_index.markdown"})
# A Markdown link or image `[text](target "title")` (the target between `<…>` when it holds
# spaces), or an autolink `<https://…>`.
_LINK = re.compile(
    r"!?\[([^\]]*)\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
    r"|<(\w+://[^>\s]+)>"
)
# A Hugo cross-reference, inside a link or alone: `{{< ref "./NodeRAIDDegraded.md" >}}`.
_HUGO_REF = re.compile(r"\{\{[<%]\s*(?:rel)?ref\s+\"([^\"]+)\"\s*[>%]\}\}")
_EMPTIED_LINK = re.compile(r"!?\[[^\]]*\]\(\s*\)")
# A reference-style link's definition, `[1]: https://…` on a line of its own; its use
# `[text][1]` is left with the text.
_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+[\"'(].*)?$", re.MULTILINE)
_REFERENCE_USE = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
_BARE_URL = re.compile(r"\b\w+://[^\s)\]>]+")
# What each form of link needs to be written: `](` a Markdown link, `://` an autolink or a
# bare URL, `{{` a Hugo ref, `]:` a definition.
_LINK_MARKS = ("](", "://", "{{", "]:")
_URL_END = ".,;:!?'\""  # a sentence's end after a bare URL is no part of it
_WORD = re.compile(rf"[^\W_{tokenize.CJK_CLASS}]+|[{tokenize.CJK_CLASS}]+")


@dataclass(frozen=True, slots=True)
class Link:
    target: str
    hugo_ref: bool = False  # a Hugo `ref`: relative to the page, or else to the corpus root


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


def redirects(
    documents: Sequence[Document],
    indexed: Callable[[Document], bool],
    pointers: Collection[str],
) -> Redirects:
    """The documents that only point, in `pointers` words, to another one of `documents`
    that has something `indexed` (a chunk that is no placeholder)."""
    by_source = {d.source: n for n, d in enumerate(documents)}
    by_tail: dict[tuple[str, ...], list[int]] = {}  # last two path segments → documents
    for number, document in enumerate(documents):
        by_tail.setdefault(tuple(document.source.split("/")[-2:]), []).append(number)
    found: dict[int, int] = {}
    for number, document in enumerate(documents):
        link = _only_link(document, pointers)
        if link is None:
            continue
        target = _target(document, link, documents, by_source, by_tail)
        if target is not None and indexed(documents[target]):
            found[number] = target
    # A stub that points to another stub (or to itself) keeps its text: only a page that
    # answers may stand in for one (and two stubs pointing at each other both stay).
    return Redirects({stub: target for stub, target in found.items() if target not in found})


def _only_link(document: Document, pointers: Collection[str]) -> Link | None:
    """The one link of a page that says only where to look, or None."""
    if document.source.rsplit("/", 1)[-1].lower() in FOLDER_PAGES or not document.chunks:
        return None
    text = "\n".join(c.content for c in document.chunks)
    if len(text) > STUB_MAX_CHARS:
        return None  # no page of a dozen words and a link is longer
    if not any(mark in text for mark in _LINK_MARKS):
        return None  # no link of any form: most pages of a Chinese corpus are this short
    links: list[Link] = []

    def hugo(match: re.Match[str]) -> str:
        links.append(Link(match.group(1), hugo_ref=True))
        return " "

    def markdown(match: re.Match[str]) -> str:
        links.append(Link(match.group(2) or match.group(3) or match.group(4)))
        return " "

    def defined(match: re.Match[str]) -> str:
        links.append(Link(match.group(1)))
        return " "

    rest = _HUGO_REF.sub(hugo, text)
    rest = _EMPTIED_LINK.sub(" ", rest)  # the link whose target was a Hugo ref, read above
    rest = _LINK.sub(markdown, rest)
    rest = _DEFINITION.sub(defined, rest)
    rest = _REFERENCE_USE.sub(" ", rest)
    links += [Link(url.rstrip(_URL_END)) for url in _BARE_URL.findall(rest)]
    rest = _BARE_URL.sub(" ", rest)
    words = [w.lower() for w in _WORD.findall(rest)]
    if len(links) != 1 or not words or len(words) > STUB_MAX_WORDS:
        return None
    if not all(w in pointers or _pointer_run(w, pointers) for w in words):
        return None  # the page says something of its own besides its link
    return links[0]


def _pointer_run(word: str, pointers: Collection[str]) -> bool:
    """Whether a run of Chinese characters is made of pointer words (`本页已迁移到`): a
    greedy cut into the longest pointer words, each of one to three characters."""
    position = 0
    while position < len(word):
        for size in (3, 2, 1):
            if word[position : position + size] in pointers:
                position += size
                break
        else:
            return False
    return bool(word)


def _target(
    stub: Document,
    link: Link,
    documents: Sequence[Document],
    by_source: dict[str, int],
    by_tail: dict[tuple[str, ...], list[int]],
) -> int | None:
    """The page a stub's link names, or None."""
    parts = urlsplit(link.target)
    path = unquote(parts.path)
    if not path:
        return None  # `#section`: a place on the stub itself
    if not (parts.scheme or parts.netloc or path.startswith("/")):  # relative: exactly a page
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(stub.source), path))
        found = by_source.get(resolved)
        if found is None and link.hugo_ref:
            found = by_source.get(posixpath.normpath(path))  # Hugo: from the content root
        return found
    segments = [s for s in path.split("/") if s]
    # The page whose source ends like the path, over its folder and file name at least (as
    # `by_tail` holds them); of several, the one that shares the longest ending, if only one.
    shared = {
        n: _shared_ending(segments, documents[n].source.split("/"))
        for n in (*by_tail.get(tuple(segments[-2:]), ()), *by_tail.get(tuple(segments[-1:]), ()))
    }
    shared = {n: length for n, length in shared.items() if length >= min(2, _depth(documents[n]))}
    if not shared:
        return None
    longest = max(shared.values())
    best = [n for n, length in shared.items() if length == longest]
    if len(best) != 1:
        return None
    target = documents[best[0]]
    stem = target.source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    # Another site's page may end the same way: the stub must be named as the page is.
    return best[0] if _key(stub.title) in (_key(target.title), _key(stem)) else None


def _shared_ending(segments: list[str], source: list[str]) -> int:
    """How many path segments, from the last, the link and the source have in common."""
    count = 0
    while count < min(len(segments), len(source)) and segments[-1 - count] == source[-1 - count]:
        count += 1
    return count


def _depth(document: Document) -> int:
    return document.source.count("/") + 1


def _key(name: str) -> str:
    """A name compared without case, spaces or punctuation (`Kube API Down` = `KubeAPIDown`)."""
    return re.sub(r"[\W_]+", "", name).casefold()
