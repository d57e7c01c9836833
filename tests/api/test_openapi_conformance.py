"""schemathesis against the live app: the service does what /openapi.json says it does.

Every check schemathesis has (server errors, status codes, content types, response headers and
bodies against the schema, valid data accepted, invalid data refused, auth enforced, methods
refused) runs on every operation, with a bounded number of examples per operation. The app runs
with both roles' tokens set and the embedded engine, so lookups are real.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from lookup_knowledge.app import create_app
from support import RecordingAudit, make_settings

LOOKUP_TOKEN = "agent-token-1"
LEDGER_TOKEN = "guard-token-1"
EXAMPLES_PER_OPERATION = 60
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            # Invalid data may also be refused for its size: every body over 64 KiB is a 413.
            "negative_data_rejection": {
                "expected-statuses": [
                    *("400", "401", "403", "404", "405", "406", "409", "413", "415", "422"),
                    *("428", "429", "5xx"),
                ]
            }
        },
        "operations": [
            {
                # A report may cite at most 50 tool calls in all: a bound across its analyses
                # that JSON Schema cannot state, so a schema-valid report can be refused (422).
                "include-path": "/guard/verify",
                "checks": {"positive_data_acceptance": {"enabled": False}},
            }
        ],
    }
)


def _live_schema() -> Any:
    """The schema the app serves, bound to the app; its lifespan starts with the first call.

    (Built here rather than in a fixture: schemathesis' fixture-based loader does not run on
    this pytest.) The audit is a recording fake, so nothing is written under `unused`.
    """
    unused = Path(tempfile.gettempdir()) / "lk-openapi-unused"
    app = create_app(
        make_settings(
            unused,
            pyrag_base_url=None,
            lookup_api_tokens=LOOKUP_TOKEN,
            ledger_api_tokens=LEDGER_TOKEN,
        ),
        audit=RecordingAudit(),
    )
    schema = schemathesis.openapi.from_dict(json.loads(json.dumps(app.openapi())), config=CONFIG)
    schema.app = app
    return schema


schema = _live_schema()


@schema.auth(refresh_interval=None)
class RoleTokens:
    """The token of the role that guards each operation. Set by schemathesis itself, so the
    cases that leave it out on purpose (auth must be enforced) go out without it."""

    def get(self, case: Any, context: Any) -> str:
        path: str = context.operation.path
        return LEDGER_TOKEN if path.startswith(("/ledger", "/guard")) else LOOKUP_TOKEN

    def set(self, case: Any, data: str, context: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_does_what_the_schema_says(case: Any) -> None:
    case.call_and_validate()
