"""The audit database checked at start (docs/audit.md#misconfiguration).

A mistake in `AUDIT_DATABASE_URL` (another kind of database, an unknown database, wrong
credentials, a table the rows cannot go into) is a configuration error: the service must not
start. A database that cannot be reached is an outage: the service starts and reports the audit
not ready until it reaches it, journalling rows meanwhile. `preflight` checks the settings
without touching the database; this is the part that connects.
"""

from __future__ import annotations

from sqlalchemy import make_url
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from lookup_knowledge.audit import schema, sql
from lookup_knowledge.preflight import ConfigurationError, Problem

VARIABLE = "AUDIT_DATABASE_URL"


def check_audit_database(url: str, *, timeout_s: float = 10) -> str | None:
    """Connect, create or upgrade the table, check it takes rows.

    Raises ConfigurationError (one problem naming AUDIT_DATABASE_URL) for a mistake; returns
    the reason when the database cannot be reached; None when all is well.
    """
    parsed = _parse(url)
    shown = parsed.render_as_string(hide_password=True)
    try:
        engine = sql.create_audit_engine(parsed, timeout_s=timeout_s)
    except (NoSuchModuleError, ArgumentError, ImportError) as exc:
        raise _mistake(f"no driver for {parsed.drivername!r}: {exc}") from None
    except OSError as exc:
        raise _mistake(f"cannot create the folder of {shown}: {exc}") from None
    try:
        schema.ensure_schema(engine)
        schema.check_compatible(engine)
    except schema.SchemaMismatch as exc:
        raise _mistake(f"{exc} ({shown})") from None
    except Exception as exc:
        if sql.classify(exc) is sql.Failure.MISCONFIGURED or parsed.get_backend_name() == "sqlite":
            # A local file that cannot be opened is a wrong path, not an outage.
            raise _mistake(f"{sql.brief(exc)} ({shown})") from None
        return f"{sql.brief(exc)} ({shown})"
    finally:
        engine.dispose()
    return None


def _mistake(message: str) -> ConfigurationError:
    return ConfigurationError([Problem(VARIABLE, message)])


def _parse(url: str) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise _mistake("not a database URL") from None
    if parsed.get_backend_name() not in sql.SUPPORTED_BACKENDS:
        raise _mistake(
            f"unsupported database {parsed.drivername!r}: use mysql+pymysql://user:pass@host/db "
            "or sqlite:///path/audit.db"
        )
    return parsed
