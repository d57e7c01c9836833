"""requirements.lock / requirements-dev.lock pin every dependency pyproject.toml declares."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
_PIN = re.compile(r"^([A-Za-z0-9_.\-\[\],]+)==([^\s;]+)", re.MULTILINE)


def pins(lock: str) -> dict[str, str]:
    text = (ROOT / lock).read_text()
    return {canonicalize_name(name.split("[")[0]): version for name, version in _PIN.findall(text)}


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [
        ("requirements.lock", PROJECT["dependencies"]),
        (
            "requirements-dev.lock",
            PROJECT["dependencies"] + PROJECT["optional-dependencies"]["dev"],
        ),
    ],
)
def test_every_declared_dependency_is_pinned_within_its_range(
    lock: str, requirements: list[str]
) -> None:
    pinned = pins(lock)
    for line in requirements:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not in {lock}: run scripts/lock.sh"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{lock} pins {name}=={pinned[name]} outside {requirement.specifier}"
        )


def test_the_dev_lock_agrees_with_the_runtime_lock() -> None:
    runtime, dev = pins("requirements.lock"), pins("requirements-dev.lock")
    assert {name: dev.get(name) for name in runtime} == runtime
