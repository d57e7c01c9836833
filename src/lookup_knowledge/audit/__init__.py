"""The audit trail: one `tool_invocation` row per lookup call and one `guard_verification` row
per report verification, none lost (docs/audit.md).

    row.py         the row builder (pure): what a call leaves, text made valid Unicode
    lines.py       a row as one ASCII JSON line (the spool's and the quarantine's format)
    spool.py       the local outbox every row passes through before its answer leaves
    segments.py    the spool's files: create, claim, read, acknowledge
    writer.py      the AuditPort: spool in, batches to the database, quarantine aside
    health.py      what the writer knows of its database, as /readyz shows it
    sql.py         the SQL store: engine, inserts, reads, what a failure means
    schema.py      the tables, their in-place upgrade and their compatibility check
    quarantine.py  rows the database refused, kept for an operator
    check.py       the start-up check of AUDIT_DATABASE_URL
    cli.py         `lookup-knowledge audit show | quarantine | requeue`

Only `row.py` is imported by the service; the rest is reached through `domain.ports.AuditPort`.
Nothing is imported here, so importing the row builder pulls in no database driver.
"""
