"""docs/configuration.md has a row for every setting, and the default each row states is the
one settings.py has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import SecretStr

from lookup_knowledge.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
# Variables the service reads that are not Settings fields (prometheus-client's own).
NOT_SETTINGS = {"PROMETHEUS_MULTIPROC_DIR"}


def documented_defaults(text: str) -> dict[str, str]:
    """Variable → the first word of its default cell, for each `| `NAME` | default | ...` row."""
    rows: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"\| `([A-Z][A-Z0-9_]+)` \| ([^|]+) \|", line)
        if match:
            rows[match.group(1)] = match.group(2).split()[0].strip("`")
    return rows


def default_matches(stated: str, default: object) -> bool:
    if stated == "unset":
        return default is None
    if "<" in stated:  # derived from another setting (`<DATA_DIR>/...`)
        return True
    if isinstance(default, SecretStr):
        return stated == default.get_secret_value()
    if isinstance(default, bool):
        return stated == str(default).lower()
    if isinstance(default, int | float):
        return float(stated) == float(default)
    return stated == str(default) or Path(stated) == default


def test_every_setting_has_a_row_with_its_default() -> None:
    rows = documented_defaults((ROOT / "docs" / "configuration.md").read_text(encoding="utf-8"))
    fields = {name.upper(): field for name, field in Settings.model_fields.items()}
    assert set(fields) - set(rows) == set(), "settings without a row"
    assert set(rows) - set(fields) - NOT_SETTINGS == set(), "rows that are no setting"
    wrong = {
        name: (rows[name], field.default)
        for name, field in fields.items()
        if not default_matches(rows[name], field.default)
    }
    assert wrong == {}


@pytest.mark.parametrize(
    ("stated", "default"),
    [("25", 24), ("unset", 5), ("true", False), ("`json`", "auto"), ("./other", Path("./var"))],
)
def test_a_stated_default_that_differs_is_caught(stated: str, default: object) -> None:
    assert not default_matches(stated.strip("`"), default)
