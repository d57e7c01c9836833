"""The README quotes the files under examples/ verbatim, so the docs cannot drift from them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUOTE = re.compile(r"<!-- quote: (?P<path>\S+) -->\n```[a-z]*\n(?P<body>.*?)\n```", re.DOTALL)


def quotes() -> dict[str, str]:
    readme = (ROOT / "README.md").read_text()
    found = {m["path"]: m["body"] for m in QUOTE.finditer(readme)}
    assert readme.count("<!-- quote:") == len(found), "a quote marker is not followed by a block"
    return found


def test_every_quoted_block_is_the_file_it_names() -> None:
    for path, body in quotes().items():
        assert body == (ROOT / path).read_text().rstrip("\n"), f"README quote of {path} is stale"


def test_every_example_is_quoted() -> None:
    examples = {p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").iterdir()}
    assert examples == set(quotes())
