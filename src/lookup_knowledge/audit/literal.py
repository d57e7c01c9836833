"""The text of a multi-row INSERT for MySQL/MariaDB, written from the audit rows directly.

The statement is SQLAlchemy's own upsert for the dialect (audit/sql.py), compiled once per
table and set of columns; what is written here is the per-row work around it, which
SQLAlchemy's bind processing and PyMySQL's per-value escaping did before
(docs/performance.md#audit-writer): every string a hex literal, the rest as PyMySQL writes
it. The loops let go of the GIL between slices of work (audit/gil.py).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Table
from sqlalchemy.engine import Dialect

from lookup_knowledge.audit.gil import in_slices

MAX_STATEMENT_BYTES = 1024000  # what PyMySQL's executemany puts in one statement
NO_PARAMETERS = {"no_parameters": True}  # the driver sends the text as it is, no % formatting

_VALUES = re.compile(r"(?s)(.*?\bVALUES\s*)(\((?:\s*%\(\w+\)s\s*,?)+\))(.*)\Z")
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def hex_literal(text: str) -> str:
    """`text` as a hex literal with a character-set introducer: the server stores the same
    text, and nothing in it is escaped (UnicodeEncodeError for a lone surrogate). The wire of
    the core path sends long strings so too (audit/mysql_wire.py)."""
    return "_utf8mb4 X'" + text.encode("utf-8").hex() + "'"


def sql_float(value: float) -> str:
    """As PyMySQL writes a float; a non-finite one is refused (a row error, never sent)."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} has no SQL literal")
    text = repr(value)
    return text if "e" in text else text + "e0"


def sql_datetime(value: datetime) -> str:
    if value.tzinfo is not None:
        raise ValueError("audit timestamps are naive UTC (db_timestamp)")
    return "'" + value.isoformat(" ") + "'"


_SQL_LITERALS: dict[type, Any] = {
    str: hex_literal,
    bool: lambda value: "1" if value else "0",
    int: str,
    float: sql_float,
    datetime: sql_datetime,
}


def _sql_null(_: None) -> str:
    return "NULL"


_SQL_LITERALS[type(None)] = _sql_null


class LiteralInsert:
    """One table's multi-row INSERT for MySQL/MariaDB, its text built from the rows directly.

    The statement is SQLAlchemy's own upsert (audit/sql.py builds it per dialect), compiled
    once for the connection's dialect; what this skips is the per-row work around it:
    SQLAlchemy's bind processing and PyMySQL's per-value escaping
    (docs/performance.md#audit-writer). Values are written as PyMySQL writes them, except that
    every string is a hex literal. JSON columns go through the engine's serializer, as
    SQLAlchemy's JSON type sends them (None as JSON null).
    Rows are cut into statements of at most `MAX_STATEMENT_BYTES`, as PyMySQL's executemany
    cuts them, all in the caller's transaction.
    """

    def __init__(self, prefix: str, template: str, postfix: str, encoders: dict[str, Any]):
        self.prefix = prefix
        self.template = template
        self.postfix = postfix
        self.encoders = encoders

    def values(self, row: Mapping[str, Any]) -> str:
        literals = {}
        for name, encode in self.encoders.items():
            value = row[name]
            literals[name] = (encode or _SQL_LITERALS[type(value)])(value)
        return self.template % literals

    def statements(self, rows: Sequence[Mapping[str, Any]]) -> Iterator[str]:
        room = MAX_STATEMENT_BYTES - len(self.prefix) - len(self.postfix)
        batch: list[str] = []
        size = 0
        for row in in_slices(rows):
            values = self.values(row)  # ASCII only: its length is its size in bytes
            if batch and size + len(values) + 1 > room:
                yield self.prefix + ",".join(batch) + self.postfix
                batch, size = [], 0
            batch.append(values)
            size += len(values) + 1
        if batch:
            yield self.prefix + ",".join(batch) + self.postfix


@functools.lru_cache(maxsize=64)
def literal_insert(
    dialect: Dialect, upsert: Any, table: Table, keys: tuple[str, ...]
) -> LiteralInsert | None:
    """The literal insert of `keys` into `table` for this dialect, from its `upsert`; None when
    the compiled statement is not the plain `INSERT ... VALUES (...) ...` it expects (the core
    path then)."""
    if upsert is None or not set(keys) <= set(table.c.keys()):
        return None
    compiled = upsert.compile(dialect=dialect, column_keys=list(keys))
    statement = str(compiled)
    if "%%" in statement:  # a literal % somewhere: not the statement this expects
        return None
    if compiled.positional:  # `%s` in bind order (mysqlclient): named, for the template
        names = list(compiled.positiontup or ())
        pieces = statement.split("%s")
        if len(pieces) != len(names) + 1:
            return None
        statement = pieces[0] + "".join(
            f"%({name})s{piece}" for name, piece in zip(names, pieces[1:], strict=True)
        )
    match = _VALUES.match(statement)
    if match is None or "%" in match.group(1) + match.group(3):
        return None
    prefix, template, postfix = match.groups()
    if sorted(_PLACEHOLDER.findall(template)) != sorted(keys):
        return None
    serializer = getattr(dialect, "_json_serializer", None) or json.dumps
    encoders: dict[str, Any] = {}
    for key in keys:
        if isinstance(table.c[key].type, JSON):
            encoders[key] = functools.partial(_json_literal, serializer)
        else:
            encoders[key] = None
    return LiteralInsert(prefix, template, postfix, encoders)


def _json_literal(serializer: Any, value: Any) -> str:
    return hex_literal(serializer(value))
