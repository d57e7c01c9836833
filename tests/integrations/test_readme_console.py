"""The README's console examples are run, and what they print is what the README shows.

Every ```console block of README.md is a session: `$ ` starts a command (continued over lines
ending in `\\` or inside an open quote), the lines after it are its output. The commands run
in order, in bash, against one `lookup-knowledge serve` with the embedded defaults (a free port
stands in for 8080), and their output must equal the README's, timestamps aside.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from process import free_port, running_service

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```console\n(.*?)\n```", re.DOTALL)
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")


@dataclass(frozen=True)
class Example:
    command: str
    expected: str


def complete(command: str) -> bool:
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command)
    except ValueError:  # an open quote: the command goes on on the next line
        return False
    return True


def examples(text: str) -> list[Example]:
    found: list[Example] = []
    for block in BLOCK.findall(text):
        lines = block.split("\n")
        index = 0
        while index < len(lines):
            line = lines[index]
            assert line.startswith("$ "), f"a console block must start with a command: {line!r}"
            command = line[2:]
            index += 1
            while not complete(command):
                command += "\n" + lines[index]
                index += 1
            output = []
            while index < len(lines) and not lines[index].startswith("$ "):
                output.append(lines[index])
                index += 1
            found.append(Example(command, "\n".join(output)))
    return found


def normalized(text: str) -> str:
    return TIMESTAMP.sub("<time>", text).rstrip()


def test_the_parser_reads_multi_line_commands_and_their_output() -> None:
    text = "```console\n$ echo 'a\n b' \\\n  | cat\na\n b\n$ true\n```"

    assert examples(text) == [Example("echo 'a\n b' \\\n  | cat", "a\n b"), Example("true", "")]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    if shutil.which("curl") is None:
        pytest.skip("the README's examples use curl")
    home = tmp_path_factory.mktemp("readme")
    port = free_port()
    env = {"DATA_DIR": str(home / "data"), "PORT": str(port)}
    with running_service(["serve"], cwd=home, env=env, port=port, timeout_s=120):
        yield port


def test_every_console_example_prints_what_the_readme_shows(service: int, tmp_path: Path) -> None:
    found = examples((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(found) >= 6, "the README's console examples went missing"
    bin_dir = str(Path(sys.executable).parent)  # `python` and `lookup-knowledge` of this venv
    env = {k: v for k, v in os.environ.items() if k in {"HOME", "LANG", "LC_ALL"}}
    env["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    env["PYTHONIOENCODING"] = "utf-8"

    for example in found:
        command = example.command.replace("localhost:8080", f"localhost:{service}")
        command = command.replace("127.0.0.1:8080", f"127.0.0.1:{service}")
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        shown = normalized(result.stdout + result.stderr)
        assert shown == normalized(example.expected), f"$ {example.command}"
