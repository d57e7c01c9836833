"""Markdown-aware chunking: one document in, heading-scoped chunks with stable ids out.

A file is split at its ATX headings (`#` .. `######`, never inside a fenced code block).
Each heading section becomes one or more chunks whose `breadcrumb` is the heading path
`Title > Section > Subsection`; the first `# H1` is the title (else front matter `title`,
else the file name). A section longer than `max_chars` is split on paragraph boundaries,
then (a list or a table) between its items, then sentence boundaries, and only as a last
resort mid-sentence, at a space when there is one; a fenced code block stays
whole when it fits and is otherwise split by lines, each piece re-fenced.

Ids are stable because citations outlive the process: `document_id` is a slug of the
relative path plus a short hash of the path, the file's bytes and the chunking rules
(`CHUNKING_VERSION`, `max_chars`), so an unchanged file keeps its ids across restarts and
re-indexes, and an edit gives it new ones (an old citation then points at nothing rather
than at different text). `evidence_key` is
`f"{document_id}#chunk-{n}"`, `n` counting the file's chunks from 0.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from lookup_knowledge.engine.encoding import UNICODE, decode_page

logger = logging.getLogger(__name__)

DEFAULT_MAX_CHUNK_CHARS = 800
# Part of every document id: bump it when a change to the chunking rules would put different
# text under an existing `document_id#chunk-n`, so old citations cannot point at new text.
CHUNKING_VERSION = 3  # 2: a long list split between its items, a cut at a space; 3: sub-items kept

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# The only lines that can change the structure: a possible heading or fence, whole (group 1),
# after a newline. Read over the body with a newline before it: a pattern that starts with a
# character is tried only where that character is, one with `^` at every position.
_MARKER_LINE = re.compile(r"\n( {0,3}(?:#|`{3}|~{3})[^\n]*)")
# A sentence ends at CJK end punctuation, or at Latin end punctuation followed by a space.
_SENTENCE = re.compile(r".*?(?:[。！？；]+|[.!?;]+(?=\s)|$)\s*", re.DOTALL)
# A line that starts a list item (`- `, `* `, `+ `, `1. `, `2) `) or a table row (`|`).
_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]|^ {0,3}\|")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable unit: a heading section, or a bounded piece of one."""

    document_id: str
    index: int
    source: str
    title: str
    breadcrumb: str
    content: str

    @property
    def evidence_key(self) -> str:
        return f"{self.document_id}#chunk-{self.index}"


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed Markdown file: its metadata and its chunks in reading order."""

    document_id: str
    source: str
    title: str
    category: str
    front_matter: Mapping[str, str] = field(default_factory=dict)
    chunks: tuple[Chunk, ...] = ()

    @property
    def tags(self) -> tuple[str, ...]:
        return _split_list(self.front_matter.get("tags", ""))

    def matches(self, key: str, value: str) -> bool:
        """Whether the filter `key=value` holds (case-insensitive; `tags`/`tag` test membership)."""
        key, wanted = filter_key(key, value)
        if key == "category":
            return self.category.casefold() == wanted
        if key in ("tags", "tag"):
            return wanted in {tag.casefold() for tag in self.tags}
        actual = self.front_matter.get(key)
        return actual is not None and actual.strip().casefold() == wanted


def filter_key(key: str, value: str) -> tuple[str, str]:
    """A filter as `Document.matches` reads it: filters of the same key match alike."""
    return key.strip().lower(), value.strip().casefold()


def parse_document(
    source: str, raw: bytes, *, max_chars: int = DEFAULT_MAX_CHUNK_CHARS
) -> Document:
    """Chunk one Markdown file; `source` is its posix path relative to the docs root."""
    if max_chars < 40:
        raise ValueError("max_chars must be at least 40")
    text, encoding = decode_page(raw)
    if encoding not in UNICODE:
        logger.warning("%s is not UTF-8: read as %s", source, encoding)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    front_matter, body = split_front_matter(text)
    path = PurePosixPath(source)
    document_id = make_document_id(source, raw, max_chars=max_chars, encoding=encoding)
    headings = _headings(body)
    first_h1 = next((name for _, _, level, name in headings if level == 1), None)
    title = first_h1 or front_matter.get("title", "").strip() or path.name.split(".")[0]
    category = front_matter.get("category", "").strip() or (
        path.parts[0] if len(path.parts) > 1 else ""
    )
    chunks: list[Chunk] = []
    for heading_path, section in _sections(body, headings, title):
        breadcrumb = " > ".join([title, *heading_path])
        for piece in _bound(section, max_chars):
            chunks.append(Chunk(document_id, len(chunks), source, title, breadcrumb, piece))
    return Document(document_id, source, title, category, front_matter, tuple(chunks))


def make_document_id(
    source: str, raw: bytes, *, max_chars: int = DEFAULT_MAX_CHUNK_CHARS, encoding: str = "utf-8"
) -> str:
    """Readable slug of the path plus a hash of path, bytes and chunking rules. A page read in
    another encoding than UTF-8 has it in the rules too: such pages were once read as UTF-8,
    replacement characters for every byte beyond ASCII, and their chunks' text is another
    now, so their ids must be other ones."""
    normalized = unicodedata.normalize("NFKC", source).lower()
    slug = re.sub(r"[^a-z0-9]+", "-", normalized).strip("-") or "doc"
    rules = f"chunking-v{CHUNKING_VERSION}:{max_chars}"
    if encoding != "utf-8":
        rules += f":{encoding}"
    digest = hashlib.sha256(f"{rules}\0{source}\0".encode() + raw).hexdigest()[:8]
    return f"{slug}-{digest}"


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split `---`-delimited `key: value` front matter from the body; none → ({}, text)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            meta: dict[str, str] = {}
            for line in lines[1:end]:
                key, sep, value = line.partition(":")
                if sep and key.strip():
                    meta[key.strip().lower()] = value.strip().strip("'\"")
            return meta, "\n".join(lines[end + 1 :])
    return {}, text


def _split_list(value: str) -> tuple[str, ...]:
    items = value.strip().removeprefix("[").removesuffix("]").split(",")
    return tuple(item.strip().strip("'\"") for item in items if item.strip().strip("'\""))


def _heading(line: str) -> tuple[int, str] | None:
    if not line.lstrip(" ").startswith("#"):  # fast path: most lines are no heading
        return None
    match = _HEADING.match(line)
    if match is None or not match.group(2).strip():
        return None
    return len(match.group(1)), " ".join(match.group(2).split())


def _fenced_lines(body: str) -> Iterator[tuple[str, bool]]:
    """Yield each line with whether it is inside (or delimits) a fenced code block."""
    fence: str | None = None
    for line in body.split("\n"):
        match = _FENCE.match(line) if line.lstrip(" ").startswith(("`", "~")) else None
        if fence is None:
            if match:
                fence = match.group(1)
                yield line, True
                continue
            yield line, False
        else:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            yield line, True


def _headings(body: str) -> list[tuple[int, int, int, str]]:
    """(line start, line end, level, name) of each heading outside fenced code blocks.

    Only lines that could be a heading or a fence are looked at (one regex scan), which
    gives what a line-by-line pass through `_fenced_lines` and `_heading` gives.
    """
    found: list[tuple[int, int, int, str]] = []
    fence: str | None = None
    for marker in _MARKER_LINE.finditer("\n" + body):
        line = marker.group(1)
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        if match:
            fence = match.group(1)
            continue
        heading = _heading(line)
        if heading is not None:
            found.append((marker.start(1) - 1, marker.end(1) - 1, *heading))
    return found


def _sections(
    body: str, headings: list[tuple[int, int, int, str]], title: str
) -> list[tuple[list[str], str]]:
    """(heading path below the title, section text) for every section that has text."""
    sections: list[tuple[list[str], str]] = []
    stack: list[tuple[int, str]] = []
    title_seen = False
    start = 0  # where the current section's text begins
    for line_start, line_end, level, name in headings:
        sections.append(([name for _, name in stack], body[start : max(start, line_start - 1)]))
        start = line_end + 1
        if level == 1 and name == title and not title_seen:
            title_seen = True  # the title heading is the breadcrumb root, not a path element
            stack.clear()
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
    sections.append(([name for _, name in stack], body[start:]))
    return [(path, text.strip("\n")) for path, text in sections if text.strip()]


def _blocks(section: str) -> list[str]:
    """Paragraphs separated by blank lines, with each fenced code block kept as one block."""
    blocks: list[str] = []
    current: list[str] = []
    current_is_code = False
    for line, in_code in _fenced_lines(section):
        if in_code != current_is_code or (not in_code and not line.strip()):
            if any(item.strip() for item in current):
                blocks.append("\n".join(current).strip("\n"))
            current = []
            current_is_code = in_code
            if not in_code and not line.strip():
                continue
        current.append(line)
    if any(item.strip() for item in current):
        blocks.append("\n".join(current).strip("\n"))
    return blocks


def _bound(section: str, max_chars: int) -> list[str]:
    """Split a section into pieces of at most `max_chars`, on the coarsest boundary that fits."""
    if len(section) <= max_chars:
        return [section.strip()]
    units: list[str] = []
    for block in _blocks(section):
        if len(block) <= max_chars:
            units.append(block)
        elif _FENCE.match(block):
            units.extend(_split_code(block, max_chars))
        else:
            units.extend(_split_items(block, max_chars))
    return _pack(units, max_chars, "\n\n")


def _split_items(block: str, max_chars: int) -> list[str]:
    """A long list or table between its items (an item with its continuation lines), each
    item too long for a chunk between its sentences; other prose between its sentences."""
    items: list[list[str]] = []
    indent: int | None = None  # the first item's: a deeper one is a sub-item of its item
    for line in block.split("\n"):
        depth = len(line) - len(line.lstrip(" \t"))
        if _ITEM.match(line) and (indent is None or depth <= indent):
            indent = depth if indent is None else indent
            items.append([line])
        elif items:
            items[-1].append(line)
        else:
            items.append([line])
    if len(items) < 2:
        return _split_prose(block, max_chars)
    units: list[str] = []
    for item in ("\n".join(lines) for lines in items):
        units.extend([item] if len(item) <= max_chars else _split_prose(item, max_chars))
    return _pack(units, max_chars, "\n")


def _split_prose(paragraph: str, max_chars: int) -> list[str]:
    # A sentence longer than a whole chunk has no better boundary left: cut it.
    pieces = [cut for s in _SENTENCE.findall(paragraph) if s for cut in _cut(s, max_chars)]
    return [piece.strip() for piece in _pack(pieces, max_chars, "") if piece.strip()]


def _split_code(block: str, max_chars: int) -> list[str]:
    lines = block.split("\n")
    fence = _FENCE.match(lines[0])
    closed = len(lines) > 1 and _FENCE.match(lines[-1]) is not None
    opening = lines[0]
    closing = lines[-1] if closed else (fence.group(1) if fence else "```")
    inner = lines[1:-1] if closed else lines[1:]
    room = max(1, max_chars - len(opening) - len(closing) - 2)
    pieces = [cut for line in inner for cut in (_cut(line, room) or [""])]
    return [f"{opening}\n{body}\n{closing}" for body in _pack(pieces, room, "\n")]


def _cut(text: str, size: int) -> list[str]:
    """Pieces of at most `size`, each ending at the last space or line break that leaves it
    more than half full (never inside a word when a space allows), else cut at `size`."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > size:
        limit = start + size
        end = max(text.rfind(" ", start, limit + 1), text.rfind("\n", start, limit + 1))
        end = end if end > start + size // 2 else limit
        pieces.append(text[start:end])
        start = end
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _pack(units: list[str], max_chars: int, joiner: str) -> list[str]:
    """Greedily join units into pieces of about equal size, none over `max_chars`."""
    total = sum(len(unit) for unit in units) + len(joiner) * max(0, len(units) - 1)
    target = total / max(1, -(-total // max_chars))  # equal shares of the fewest pieces
    pieces: list[str] = []
    current = ""
    for unit in units:
        candidate = f"{current}{joiner}{unit}" if current else unit
        if current and (len(candidate) > max_chars or len(current) >= target):
            pieces.append(current)
            current = unit
        else:
            current = candidate
    if current:
        pieces.append(current)
    return pieces
