"""The report's JSON Schema ships as a file that is exactly what the model generates."""

from __future__ import annotations

import json
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from lookup_knowledge.guard.schema import SCHEMA_FILE, generated_schema, render, report_schema_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_schema_is_the_one_the_report_model_generates() -> None:
    assert report_schema_text() == render(generated_schema()), (
        "report.schema.json is stale: python -m lookup_knowledge.guard.schema"
    )


def test_the_schema_requires_analyses_and_limitations_and_forbids_unknown_keys() -> None:
    schema = json.loads(report_schema_text())

    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["analyses", "limitations"]
    assert schema["additionalProperties"] is False
    citation = schema["$defs"]["Citation"]
    assert citation["required"] == ["tool_call_id", "kind"]
    assert schema["$defs"]["CitationKind"]["enum"] == ["NORMAL", "NEGATIVE_OBSERVATION"]


def test_the_schema_file_is_package_data() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["lookup_knowledge"]

    assert any(fnmatch(f"guard/{SCHEMA_FILE}", pattern) for pattern in patterns)
