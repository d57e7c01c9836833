"""A client generated from the live /openapi.json by openapi-python-client works as is.

The service runs as a real process (`lookup-knowledge serve`, embedded defaults, a free port);
its schema is fed to the generator, and the generated package calls the service: a 200, a 409
and a 422 come back as typed models, the errors as the envelope (`ErrorEnvelope.error.code`),
never FastAPI's `{"detail"}`. See docs/integration.md#generated-clients.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from process import free_port, running_service

PACKAGE = "lk_generated_client"
QUERY = "网关超时怎么排查"
# One operation id per route, as docs/http-api.md names them; the generator turns them into
# module names.
OPERATIONS = {
    "lookup": {"lookup_knowledge"},
    "ledger": {"get_ledger_entry", "list_run_ledger"},
    "operations": {"healthz", "readyz", "metrics"},
    "guard": {"verify_report"},
}


def generator() -> list[str]:
    script = Path(sys.executable).with_name("openapi-python-client")
    found = str(script) if script.exists() else shutil.which("openapi-python-client")
    if found is None:
        pytest.fail("openapi-python-client is a dev dependency: install requirements-dev.lock")
    return [found]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("service")
    port = free_port()
    env = {"DATA_DIR": str(home / "data"), "PORT": str(port), "LOG_FORMAT": "json"}
    with running_service(
        ["serve"], cwd=home, env=env, port=port, ready_path="/readyz", timeout_s=120
    ) as base:
        yield base


@pytest.fixture(scope="module")
def generated(service: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The package generated from the running service's own schema, importable."""
    root = tmp_path_factory.mktemp("generated")
    schema = root / "openapi.json"
    schema.write_bytes(httpx.get(f"{service}/openapi.json", timeout=10).content)
    config = root / "config.json"
    # No post hooks: the generated code is used as generated, not reformatted.
    config.write_text(json.dumps({"package_name_override": PACKAGE, "post_hooks": []}))
    result = subprocess.run(
        [
            *generator(),
            "generate",
            "--path",
            str(schema),
            "--config",
            str(config),
            "--meta",
            "none",
            "--output-path",
            str(root / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # The generator warns about parts of a schema it could not turn into code: there must be none.
    assert "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def module(package: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{package.__name__}.{name}")


def test_operations_get_the_names_of_their_operation_ids(generated: ModuleType) -> None:
    api = Path(generated.__file__).parent / "api"

    found = {
        tag.name: {p.stem for p in tag.glob("*.py") if p.stem != "__init__"}
        for tag in api.iterdir()
        if tag.is_dir() and tag.name != "__pycache__"
    }

    assert found == OPERATIONS
    assert not any("_post" in name or "_get" in name for names in found.values() for name in names)


def test_a_200_a_409_and_a_422_round_trip_as_typed_models(
    generated: ModuleType, service: str
) -> None:
    client_module = module(generated, "client")
    lookup = module(generated, "api.lookup.lookup_knowledge")
    get_entry = module(generated, "api.ledger.get_ledger_entry")
    models = module(generated, "models")
    client = client_module.Client(base_url=service, raise_on_unexpected_status=True)

    with client:
        answered = lookup.sync_detailed(
            client=client,
            body=models.LookupRequest(run_id="gen-run", tool_call_id="call_1", query=QUERY),
        )
        conflict = lookup.sync_detailed(
            client=client,
            body=models.LookupRequest(run_id="gen-run", tool_call_id="call_1", query="other"),
        )
        refused = lookup.sync_detailed(
            client=client,
            body=models.LookupRequest(run_id="gen run", tool_call_id="call_2", query=QUERY),
        )
        entry = get_entry.sync(client=client, run_id="gen-run", tool_call_id="call_1")

    assert answered.status_code == 200
    result = answered.parsed
    assert isinstance(result, models.RagToolResult)
    assert result.evidence_status == models.RagToolResultEvidenceStatus.EVIDENCE_FOUND
    assert result.tool_call_id == "call_1" and result.query == QUERY
    assert result.returned_count == len(result.evidence) > 0
    assert all(isinstance(item, models.RagEvidenceItem) for item in result.evidence)
    assert result.evidence[0].document_id and result.evidence[0].excerpt
    assert json.loads(answered.content) == result.to_dict()  # nothing lost or added

    for response, status, code in ((conflict, 409, "CONFLICT"), (refused, 422, "INVALID_REQUEST")):
        assert response.status_code == status
        error = response.parsed
        assert isinstance(error, models.ErrorEnvelope), response.content
        assert isinstance(error.error, models.ErrorBody)
        assert error.error.code == code and error.error.message
        assert "detail" not in json.loads(response.content)
    assert conflict.parsed.error.details["reason"] == "query_mismatch"
    assert ["body", "run_id"] in [p["loc"] for p in refused.parsed.error.details]

    assert isinstance(entry, models.LedgerEntryOut)
    assert (entry.run_id, entry.tool_call_id, entry.status) == (
        "gen-run",
        "call_1",
        models.LedgerStatus.READY,
    )
    assert entry.result.to_dict() == result.to_dict()


def test_readiness_is_a_typed_model(generated: ModuleType, service: str) -> None:
    client_module = module(generated, "client")
    readyz = module(generated, "api.operations.readyz")
    models = module(generated, "models")

    with client_module.Client(base_url=service) as client:
        ready = readyz.sync(client=client)

    assert isinstance(ready, models.Readiness)
    assert ready.status == models.ReadinessStatus.READY
    assert isinstance(ready.checks, models.ReadinessChecks)
