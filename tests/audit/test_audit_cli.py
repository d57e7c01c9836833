"""`lookup-knowledge audit show RUN_ID`: the operator's view of one run, on SQLite and MariaDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit_support import (
    BACKENDS,
    UNREACHABLE_MYSQL_URL,
    database,
    make_record,
    reader,
    refuse_poison,
    stored_ids,
)
from lookup_knowledge import cli
from lookup_knowledge.audit import cli as audit_cli
from lookup_knowledge.audit import schema
from lookup_knowledge.audit import sql as audit_sql
from lookup_knowledge.audit.quarantine import QUARANTINE_FILE, Quarantine, read_entries, requeue
from lookup_knowledge.domain.audit import AuditRecord, AuditRow


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database(request.param, tmp_path) as url, reader(url) as engine:
        schema.ensure_schema(engine)
        audit_sql.insert_records(
            engine,
            [
                make_record(2, tool_call_id="call_b", replayed=True, upstream_ms=None),
                make_record(1, tool_call_id="call_a"),
                AuditRecord(
                    run_id="run-42",
                    tool_call_id="call_c",
                    query="网关 超时\n排查" * 10,
                    success=False,
                    error_code="UPSTREAM_TIMEOUT",
                    duration_ms=5003,
                    created_at=make_record(3).created_at,
                ),
                make_record(4, run_id="run-other", tool_call_id="call_other"),
            ],
        )
        yield url


def test_a_runs_calls_are_listed_in_order_with_status_level_counts_and_timings(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = audit_cli.main(["show", "run-42", "--database-url", url])

    out = capsys.readouterr().out
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "run run-42: 3 call(s)"
    assert lines[1].split()[:3] == ["time", "(UTC)", "tool_call_id"]
    a, b, c = lines[3:6]
    assert a.split()[:10] == [
        "2026-11-30",
        "10:00:00.124",
        "call_a",
        "ok",
        "EVIDENCE_FOUND",
        "PRECISE",
        "8/5/5",
        "no",
        "42",
        "30",
    ]
    assert b.split()[2:11] == [
        "call_b",
        "ok",
        "EVIDENCE_FOUND",
        "PRECISE",
        "8/5/5",
        "no",
        "42",
        "-",
        "yes",
    ]
    assert c.split()[2:11] == [
        "call_c",
        "UPSTREAM_TIMEOUT",
        "-",
        "-",
        "-/-/-",
        "-",
        "5003",
        "-",
        "no",
    ]
    assert "call_other" not in out
    assert "\n排查" not in out  # the query is one line, cut short
    assert c.endswith("…")


def test_a_run_with_no_calls_says_so_and_exits_1(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert audit_cli.main(["show", "run-unknown", "--database-url", url]) == 1
    assert capsys.readouterr().out == "no calls recorded for run run-unknown\n"


def test_the_help_says_show_lists_calls_and_verifications(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        audit_cli.main(["--help"])
    assert "tool calls and report verifications" in " ".join(capsys.readouterr().out.split())


def test_the_configured_database_is_used_when_no_url_is_given(
    url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("AUDIT_DATABASE_URL", url)

    assert cli.main(["audit", "show", "run-42"]) == 0
    assert "call_a" in capsys.readouterr().out


def test_a_missing_sqlite_file_is_reported_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "none" / "audit.db"

    assert audit_cli.main(["show", "run-42", "--database-url", f"sqlite:///{path}"]) == 2
    assert "no audit database" in capsys.readouterr().err
    assert not path.parent.exists()


def test_an_unreachable_database_is_reported_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert audit_cli.main(["show", "run-42", "--database-url", UNREACHABLE_MYSQL_URL]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cannot read the audit table at mysql+pymysql://root@127.0.0.1:1/")
    assert "Can't connect" in err


# --- audit quarantine ---


def test_an_empty_quarantine_says_so_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert audit_cli.main(["quarantine", "--spool-dir", str(tmp_path)]) == 0
    assert "no quarantined rows" in capsys.readouterr().out


def test_quarantined_rows_are_listed_with_ids_and_reason_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = Quarantine(tmp_path)
    kept.add(make_record(1, tool_call_id="call_q"), "(1644, 'poison row')")
    kept.add(make_record(2, query="a\\ud800b"), "(4025, 'CONSTRAINT failed')")

    code = cli.main(["audit", "quarantine", "--spool-dir", str(tmp_path)])

    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert lines[0] == f"2 quarantined row(s) in {tmp_path / 'quarantine.jsonl'}"
    assert "run-42/call_q" in lines[1] and "poison row" in lines[1]


def test_the_quarantine_prints_whole_rows_as_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = make_record(1)
    Quarantine(tmp_path).add(record, "refused")

    assert audit_cli.main(["quarantine", "--spool-dir", str(tmp_path), "--json"]) == 1

    [entry] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert entry["invocation_id"] == record.invocation_id
    assert entry["record"]["retrieval_details"] == record.retrieval_details
    assert entry["reason"] == "refused"


# --- audit requeue ---


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database(request.param, tmp_path) as url, reader(url) as engine:
        schema.ensure_schema(engine)
        yield url


def test_requeue_writes_the_rows_once_and_empties_the_quarantine(
    empty_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = tmp_path / "spool"
    stored, fresh = make_record(1), make_record(2, query="网关 \\ud800 超时")
    with reader(empty_url) as engine:
        audit_sql.insert_records(engine, [stored])  # written before it was also quarantined
    service_view = Quarantine(spool)
    service_view.add(stored, "(1644, 'poison row')")
    service_view.add(fresh, "(1406, 'Data too long')")

    code = audit_cli.main(["requeue", "--spool-dir", str(spool), "--database-url", empty_url])

    assert code == 0
    assert capsys.readouterr().out.splitlines() == ["2 row(s) written to the database"]
    with reader(empty_url) as engine:
        assert stored_ids(engine) == [stored.invocation_id, fresh.invocation_id]
        [row] = [r for r in audit_sql.fetch_run(engine, "run-42") if r["tool_call_id"] == "call_2"]
    assert row["query"] == fresh.query
    assert list(read_entries(spool / QUARANTINE_FILE)) == []
    assert service_view.size() == 0  # the running service sees the file it did not write


def test_a_row_refused_again_stays_with_the_new_reason_and_exit_1(
    empty_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = tmp_path / "spool"
    poison, good = make_record(1, query="poison"), make_record(2)
    with reader(empty_url) as engine:
        refuse_poison(engine)
    kept = Quarantine(spool)
    kept.add(poison, "first refusal")
    kept.add(good, "first refusal")

    code = audit_cli.main(["requeue", "--spool-dir", str(spool), "--database-url", empty_url])

    out = capsys.readouterr().out
    assert code == 1
    assert "1 row(s) written" in out and f"refused again: {poison.invocation_id}" in out
    [entry] = read_entries(spool / QUARANTINE_FILE)
    assert entry["invocation_id"] == poison.invocation_id
    assert entry["reason"] == "first refusal"
    assert "poison row" in entry["requeue_reason"] and entry["requeue_failed_at"]
    assert entry["record"]["query"] == "poison"
    with reader(empty_url) as engine:
        assert stored_ids(engine) == [good.invocation_id]


def test_requeue_with_the_database_down_changes_nothing_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = tmp_path / "spool"
    Quarantine(spool).add(make_record(1), "refused")
    before = (spool / QUARANTINE_FILE).read_bytes()

    code = audit_cli.main(
        ["requeue", "--spool-dir", str(spool), "--database-url", UNREACHABLE_MYSQL_URL]
    )

    assert code == 2
    assert "1 row(s) left in the quarantine" in capsys.readouterr().err
    assert (spool / QUARANTINE_FILE).read_bytes() == before


def test_an_outage_midway_keeps_the_untried_rows_and_drops_the_written_ones(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "spool"
    first, second = make_record(1), make_record(2)
    quarantine = Quarantine(spool)
    quarantine.add(first, "refused")
    quarantine.add(second, "refused")
    written: list[str] = []

    def write(row: AuditRow) -> None:
        if written:
            raise ConnectionError("database went away")
        written.append(row.invocation_id)

    result = requeue(spool, write, lambda exc: (False, str(exc)))

    assert result.written == [first.invocation_id] == written
    assert result.stopped == "database went away" and result.untried == 1
    [entry] = read_entries(spool / QUARANTINE_FILE)
    assert entry["invocation_id"] == second.invocation_id
    assert "requeue_reason" not in entry


def test_rows_quarantined_during_a_requeue_and_unreadable_lines_are_kept(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "spool"
    service_view = Quarantine(spool)
    first = make_record(1)
    service_view.add(first, "refused")
    with (spool / QUARANTINE_FILE).open("ab") as handle:
        handle.write(b'{"torn line\n')
    late = make_record(2)
    written: list[AuditRow] = []

    def write(row: AuditRow) -> None:
        written.append(row)
        service_view.add(late, "refused while the requeue ran")  # the service, meanwhile

    result = requeue(spool, write, lambda exc: (True, str(exc)))

    assert [r.invocation_id for r in written] == [first.invocation_id]
    assert result.written == [first.invocation_id]
    lines = (spool / QUARANTINE_FILE).read_bytes().splitlines()
    assert lines[0] == b'{"torn line'
    assert [e["invocation_id"] for e in read_entries(spool / QUARANTINE_FILE)] == [
        late.invocation_id
    ]
    assert service_view.size() == 1
    assert not service_view.add(late, "again")  # still kept once


def test_requeue_of_an_empty_quarantine_touches_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = audit_cli.main(
        ["requeue", "--spool-dir", str(tmp_path), "--database-url", UNREACHABLE_MYSQL_URL]
    )

    assert code == 0
    assert "no quarantined rows" in capsys.readouterr().out
