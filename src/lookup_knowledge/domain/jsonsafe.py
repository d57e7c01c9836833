"""Untrusted text and JSON made safe to keep: valid Unicode, bounded nesting and size.

Pure functions over plain values (docs/audit.md#bounds). A lone surrogate (`"\\ud800"` in JSON
is valid JSON but not valid Unicode text) cannot be encoded as UTF-8, so no database or file
takes it; here it becomes the six characters `\\ud800`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import orjson

CUT = "…"  # stands for whatever was cut at that place
# Bytes reserved when cutting a string, so the cut string and what follows still fit.
_STRING_RESERVE = 16
_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list, tuple})
_SEQUENCES = frozenset({list, tuple})


def find_lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in `text`, or None when it is valid Unicode."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def escape_surrogates(text: str) -> str:
    """`text` with every lone surrogate written as `\\udXXX`; valid text is returned as is."""
    if find_lone_surrogate(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_depth_within(value: Any, max_depth: int) -> bool:
    """Whether `value` nests at most `max_depth` containers (a flat object is depth 1)."""
    if not isinstance(value, Mapping | list | tuple):
        return True
    if max_depth < 1:
        return False
    stack = [(value, 1)]  # containers only: scalars cost one type check each
    while stack:
        node, depth = stack.pop()
        # Plain dicts, lists and tuples first: the ABC check costs more than walking them.
        children: Iterable[Any] = node
        if type(node) is dict or (type(node) not in _SEQUENCES and isinstance(node, Mapping)):
            children = node.values()
        for child in children:
            kind = type(child)
            if kind in _SCALARS:
                continue
            if kind in _CONTAINERS or isinstance(child, Mapping | list | tuple):
                if depth >= max_depth:
                    return False
                stack.append((child, depth + 1))
    return True


def bound_json(value: Any, *, max_depth: int, max_bytes: int) -> tuple[Any, bool]:
    """A plain-JSON copy of `value`: at most `max_depth` levels of nesting, about `max_bytes`
    of UTF-8 JSON, valid Unicode, finite numbers (others null), unknown objects as their text.
    True when something had to be cut for depth or size.

    Deeper containers become `CUT`; strings past the budget end in `CUT`; list items or keys
    past it are dropped, and one `CUT` item (or a `CUT` key counting them) takes their place.
    The size is estimated while copying; `dumps_bounded` enforces it exactly.
    """
    budget = _Budget(max_bytes)
    copy = budget.copy(value, 1, max_depth)
    return copy, budget.cut


def dumps_bounded(value: Any, *, max_depth: int, max_bytes: int) -> tuple[str, bool]:
    """Compact JSON text of `value` within both bounds (exactly, in UTF-8 bytes), and whether
    anything was cut. Valid values within the bounds are encoded as they are (the fast path)."""
    if json_depth_within(value, max_depth):
        try:  # orjson refuses lone surrogates and unknown types; non-finite numbers become null
            encoded = orjson.dumps(value)
        except TypeError:
            pass
        else:
            if len(encoded) <= max_bytes:
                return encoded.decode("utf-8"), False
    target = max_bytes
    for attempt in range(4):
        copy, cut = bound_json(value, max_depth=max_depth, max_bytes=target)
        text = _dumps(copy)
        size = len(text.encode("utf-8"))
        if size <= max_bytes:
            return text, cut or attempt > 0
        target = max(16, int(target * max_bytes / size * 0.9))
    return json.dumps(CUT), True


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _text_cost(text: str) -> int:
    return (len(text) if text.isascii() else len(text.encode("utf-8"))) + 2


class _Budget:
    def __init__(self, max_bytes: int) -> None:
        self.left = max_bytes
        self.cut = False

    def copy(self, value: Any, depth: int, max_depth: int) -> Any:
        if value is None or isinstance(value, bool):
            self.left -= 5
            return value
        if isinstance(value, int):
            self.left -= len(str(value))
            return value
        if isinstance(value, float):
            self.left -= 24
            return value if math.isfinite(value) else None
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, datetime):
            return self.text(value.isoformat())
        if isinstance(value, Mapping | list | tuple):
            if depth > max_depth:
                return self.cut_here()
            if isinstance(value, Mapping):
                return self.mapping(value, depth, max_depth)
            return self.sequence(value, depth, max_depth)
        return self.text(str(value))

    def text(self, value: str) -> str:
        value = escape_surrogates(value)
        cost = _text_cost(value)
        if cost <= self.left:
            self.left -= cost
            return value
        self.cut = True
        keep = max(0, self.left - _STRING_RESERVE)
        # Cut in UTF-8 bytes; "ignore" drops a character split at the cut.
        value = value.encode("utf-8")[:keep].decode("utf-8", "ignore")
        self.left -= _text_cost(value) + 3
        return value + CUT

    def cut_here(self) -> str:
        self.cut = True
        self.left -= 5
        return CUT

    def mapping(self, value: Mapping[Any, Any], depth: int, max_depth: int) -> dict[str, Any]:
        self.left -= 2
        out: dict[str, Any] = {}
        items = list(value.items())
        for index, (key, item) in enumerate(items):
            name = escape_surrogates(str(key))
            if self.left < _text_cost(name) + _STRING_RESERVE:
                self.cut = True
                out[CUT] = len(items) - index
                self.left -= 8
                break
            self.left -= _text_cost(name) + 2
            out[name] = self.copy(item, depth + 1, max_depth)
        return out

    def sequence(self, value: list[Any] | tuple[Any, ...], depth: int, max_depth: int) -> list[Any]:
        self.left -= 2
        out: list[Any] = []
        for item in value:
            if self.left < _STRING_RESERVE:
                self.cut = True
                out.append(CUT)
                self.left -= 6
                break
            self.left -= 1
            out.append(self.copy(item, depth + 1, max_depth))
        return out
