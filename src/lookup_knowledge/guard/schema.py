"""The report's JSON Schema, shipped as `report.schema.json` (docs/guard.md#report).

The file is generated from `GuardReport`; a test fails when the two drift apart. Regenerate:

    python -m lookup_knowledge.guard.schema
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from lookup_knowledge.guard.report import GuardReport

SCHEMA_FILE = "report.schema.json"


def generated_schema() -> dict[str, Any]:
    """The schema as the model says it today."""
    return GuardReport.model_json_schema()


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def report_schema_text() -> str:
    """The shipped schema file, exactly as it can be put into a prompt."""
    return files("lookup_knowledge.guard").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def main() -> None:
    path = Path(__file__).with_name(SCHEMA_FILE)
    path.write_text(render(generated_schema()), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()


__all__ = ["SCHEMA_FILE", "generated_schema", "render", "report_schema_text"]
