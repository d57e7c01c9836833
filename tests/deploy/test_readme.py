"""The README opens with exactly two commands, CI runs the second one verbatim, and its settings
table names every setting."""

from __future__ import annotations

import re
from pathlib import Path

from lookup_knowledge.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def opening_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```bash\n(.*?)\n```", readme, re.DOTALL)
    assert first is not None
    assert readme.index(first.group(0)) < readme.index("\n## "), "the commands come first"
    return [line for line in first.group(1).splitlines() if line.strip()]


def test_the_readme_opens_with_install_and_serve_then_the_test_suite() -> None:
    serve, suite = opening_commands()
    assert re.fullmatch(
        r"python -m pip install -r requirements\.lock \. && lookup-knowledge serve", serve
    )
    assert re.fullmatch(
        r"python -m pip install -q -r requirements-dev\.lock -e \. && python -m pytest -q", suite
    )


def test_ci_runs_the_readme_test_command() -> None:
    _, suite = opening_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert suite in ci


def test_the_readme_settings_table_names_every_setting() -> None:
    section = (ROOT / "README.md").read_text(encoding="utf-8").partition("\n## Configuration\n")[2]
    table = section.partition("\n## ")[0]
    named = set(
        re.findall(
            r"`([A-Z][A-Z0-9_]+)`",
            "\n".join(
                line.split(" | ")[0] for line in table.splitlines() if line.startswith("| `")
            ),
        )
    )
    assert {name.upper() for name in Settings.model_fields} - named == set()
