"""Long strings go to MariaDB/MySQL as hex literals, not escaped (docs/performance.md#audit-writer).

PyMySQL writes every parameter into the statement's text, escaping a string character by
character (`str.translate` with a table, some 40 ns a character). An audit row carries
kilobytes of text (the output preview, `retrieval_details` as JSON), so escaping was the
largest single cost of the writer thread, and that thread holds the GIL the event loop
needs. A string of `LONG_STRING_CHARS` or more is sent instead as `_utf8mb4 X'…'`: a hex
literal with a character-set introducer, which the server stores as the same text, and which
`bytes.hex` writes at memory speed with nothing to escape. Shorter strings, and a string that
UTF-8 cannot encode (a lone surrogate), keep PyMySQL's own escaping.
"""

from __future__ import annotations

from typing import Any

from pymysql.connections import Connection

from lookup_knowledge.audit.literal import hex_literal

LONG_STRING_CHARS = 256


class HexLiteralConnection(Connection):  # type: ignore[misc]
    """A PyMySQL connection that sends long strings as hex literals."""

    def escape(self, obj: Any, mapping: Any = None) -> str:
        if type(obj) is str and len(obj) >= LONG_STRING_CHARS:
            try:
                return hex_literal(obj)
            except UnicodeEncodeError:
                pass
        escaped: str = super().escape(obj, mapping)
        return escaped


def connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> HexLiteralConnection:
    """SQLAlchemy's `do_connect` hook: the same arguments, this connection class."""
    return HexLiteralConnection(*cargs, **cparams)
