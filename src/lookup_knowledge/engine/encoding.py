"""The text of a page's bytes: UTF-8, or the encoding its bytes were most likely written in.

Markdown is UTF-8 nearly everywhere, and that is tried first (with or without a byte order
mark). A page that is not UTF-8 was written by an older tool, and read as UTF-8 its every
accented letter or Chinese character would be a replacement character: a Chinese page saved
as GBK would hold nothing a question can name. So, in order:

1. a byte order mark names the encoding: UTF-32 or UTF-16, little or big endian; without
   one, UTF-16 still shows in its zero bytes (the high byte of every ASCII character: a
   tenth of the page's bytes or more, nearly all on one side of their characters);
2. valid UTF-8, or UTF-8 with a stray byte (its characters beyond ASCII ten times as many as
   its bytes that are not UTF-8: a Latin-1 `é` pasted into it), each such byte read as a
   replacement character;
3. GB18030 (a superset of GBK and GB2312, what Chinese Windows tools write), when the bytes
   decode and nine in ten of the characters beyond ASCII are in GB2312, the 7,445 characters
   of everyday Chinese text. Latin-1 text read as GB18030 pairs an accented letter with the
   ASCII letter after it into a rare character outside GB2312, so it fails the test;
4. Windows-1252 (Latin-1 with curly quotes and dashes where Latin-1 has control codes), and
   Latin-1 itself for the five bytes Windows-1252 leaves undefined. Every byte sequence is
   Latin-1: nothing is dropped.

Big5, Shift JIS and the other legacy encodings are not told apart:
such a page reads as Windows-1252, garbled. The parser logs every page read in another
encoding than UTF-8, with the one used (docs/retrieval.md#chunking).
"""

from __future__ import annotations

import codecs

UTF8 = "utf-8"
UNICODE = frozenset({UTF8, "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"})
REPLACEMENT = "\ufffd"
# A page whose characters beyond ASCII are this many times as many as its bytes that are no
# UTF-8 is UTF-8 with a stray byte (a Latin-1 é pasted into it), read as UTF-8.
MOSTLY_UTF8 = 10
WIDE_ZEROS = 0.1  # of a page's bytes, the zero bytes of UTF-16 without a byte order mark
ONE_SIDE = 0.95  # of those, the share on one side of their characters
GB_SHARE = 0.9  # of the characters beyond ASCII, the share in GB2312 a GB18030 page holds
_BOMS = (  # the longer marks first: UTF-32's little-endian mark starts as UTF-16's does
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_page(raw: bytes) -> tuple[str, str]:
    """The text of `raw` and the encoding it was read in (`utf-8` for nearly every page)."""
    for mark, encoding in _BOMS:
        if raw.startswith(mark):
            return raw[len(mark) :].decode(encoding, errors="replace"), encoding
    wide = _utf16_without_mark(raw)
    if wide is not None:
        return raw.decode(wide, errors="replace"), wide
    try:
        return raw.decode(UTF8), UTF8
    except UnicodeDecodeError:
        pass
    text = raw.decode(UTF8, errors="replace")
    bad = text.count(REPLACEMENT)
    if sum(1 for c in text if ord(c) > 0x7F) - bad >= MOSTLY_UTF8 * bad:
        return text, UTF8  # a UTF-8 page with a stray byte: one replacement character
    chinese = _as_gb18030(raw)
    if chinese is not None:
        return chinese, "gb18030"
    try:
        return raw.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90 or 0x9D: undefined there
        return raw.decode("latin-1"), "latin-1"


def _utf16_without_mark(raw: bytes) -> str | None:
    """`utf-16-le` or `utf-16-be` for UTF-16 without a byte order mark, else None. Markdown's
    marks, spaces and digits are ASCII, and in UTF-16 each has a zero byte on the same side of
    its two: a page whose zero bytes are `WIDE_ZEROS` of its bytes or more, nearly all on one
    side, is UTF-16 (UTF-8 text holds no zero byte)."""
    zeros = raw.count(0)
    if zeros < WIDE_ZEROS * len(raw) or len(raw) % 2:
        return None
    odd = raw[1::2].count(0)  # the high byte of an ASCII character, little-endian
    if odd >= ONE_SIDE * zeros:
        return "utf-16-le"
    if zeros - odd >= ONE_SIDE * zeros:
        return "utf-16-be"
    return None


def _as_gb18030(raw: bytes) -> str | None:
    try:
        text = raw.decode("gb18030")
    except UnicodeDecodeError:
        return None
    beyond = [c for c in text if ord(c) > 0x7F]
    common = sum(1 for c in beyond if _in_gb2312(c))
    return text if beyond and common >= GB_SHARE * len(beyond) else None


def _in_gb2312(character: str) -> bool:
    try:
        character.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return True
