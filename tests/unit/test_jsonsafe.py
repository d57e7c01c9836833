"""Untrusted text and JSON made safe to keep (docs/audit.md#bounds): pure functions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from lookup_knowledge.domain.jsonsafe import (
    CUT,
    bound_json,
    dumps_bounded,
    escape_surrogates,
    find_lone_surrogate,
    json_depth_within,
)


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"down": value}
    return value


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize(
    ("text", "index"),
    [("plain", None), ("网关超时", None), ("emoji 😀", None), ("a\ud800b", 1), ("ok\udfff", 2)],
)
def test_a_lone_surrogate_is_found_where_it_is(text: str, index: int | None) -> None:
    assert find_lone_surrogate(text) == index


def test_a_lone_surrogate_is_escaped_as_six_characters_and_the_rest_kept() -> None:
    assert escape_surrogates("a\ud800b网") == "a\\ud800b网"
    assert escape_surrogates("网关 😀") == "网关 😀"


def test_escaped_text_always_encodes_as_utf8() -> None:
    for text in ["\ud800", "\udfff\ud800", "x\ud83d", "\ud83d\ude00"]:
        escape_surrogates(text).encode("utf-8")


@pytest.mark.parametrize(("depth", "within"), [(15, True), (16, True), (17, False), (40, False)])
def test_depth_counts_nested_containers(depth: int, within: bool) -> None:
    assert json_depth_within(nested(depth), 16) is within


def test_depth_counts_lists_tuples_and_other_mappings_alike() -> None:
    from types import MappingProxyType

    def mixed(depth: int) -> Any:
        value: Any = {"leaf": 1}
        kinds = [list, tuple, MappingProxyType, dict]
        for level in range(depth - 1):
            kind = kinds[level % 4]
            value = kind({"down": value}) if kind in (MappingProxyType, dict) else kind([value])
        return value

    for depth in (1, 5, 15, 16):
        assert json_depth_within(mixed(depth), 16) is True
    for depth in (17, 30):
        assert json_depth_within(mixed(depth), 16) is False
    assert json_depth_within(MappingProxyType({"a": [(1, 2)]}), 2) is False
    assert json_depth_within(MappingProxyType({"a": [(1, 2)]}), 3) is True
    assert json_depth_within(((), ((),)), 2) is False


def test_a_trace_nested_40_deep_is_cut_to_the_bound_with_a_marker() -> None:
    value, cut = bound_json(nested(40), max_depth=16, max_bytes=65536)

    assert cut is True
    assert depth_of(value) == 16
    inner = value
    for _ in range(15):
        inner = inner["down"]
    assert inner == {"down": CUT}


def test_a_20_mb_string_is_cut_to_the_byte_bound() -> None:
    text, cut = dumps_bounded({"blob": "x" * 20_000_000, "k": 1}, max_depth=16, max_bytes=65536)

    assert cut is True
    assert len(text.encode("utf-8")) <= 65536
    assert json.loads(text)["blob"].endswith(CUT)


def test_multibyte_text_is_cut_in_bytes_on_a_character_boundary() -> None:
    text, cut = dumps_bounded({"blob": "网" * 100_000}, max_depth=16, max_bytes=1000)

    assert cut is True
    assert len(text.encode("utf-8")) <= 1000
    assert set(json.loads(text)["blob"][:-1]) == {"网"}


def test_a_long_list_keeps_its_head_and_ends_in_a_marker() -> None:
    value, cut = bound_json(list(range(100_000)), max_depth=16, max_bytes=2000)

    assert cut is True
    assert value[:3] == [0, 1, 2] and value[-1] == CUT
    assert len(json.dumps(value, separators=(",", ":"))) <= 2000 * 1.1  # estimated while copying


def test_a_long_object_keeps_its_first_keys_and_counts_the_dropped_ones() -> None:
    value, cut = bound_json({f"k{i}": i for i in range(100_000)}, max_depth=16, max_bytes=2000)

    assert cut is True
    assert value["k0"] == 0
    assert value[CUT] == 100_000 - (len(value) - 1)


def test_what_comes_first_is_kept_first() -> None:
    value, _ = bound_json({"first": "x" * 5000, "second": "y"}, max_depth=16, max_bytes=1000)

    assert value["first"].endswith(CUT)
    assert "second" not in value and value[CUT] == 1


def test_values_within_bounds_are_encoded_unchanged_and_not_marked() -> None:
    value = {"a": [1, 2.5, None, True], "b": {"c": "网关"}}

    text, cut = dumps_bounded(value, max_depth=16, max_bytes=65536)

    assert (json.loads(text), cut) == (value, False)


def test_surrogates_non_finite_numbers_and_objects_become_plain_json_without_a_cut() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)

    text, cut = dumps_bounded(
        {"k\udc00": "v\ud800", "nan": float("nan"), "when": when}, max_depth=16, max_bytes=65536
    )

    assert cut is False
    assert json.loads(text) == {"k\\udc00": "v\\ud800", "nan": None, "when": when.isoformat()}
    text.encode("utf-8")
