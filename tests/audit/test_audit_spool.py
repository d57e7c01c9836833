"""The spool on its own: rows come back in append order, exactly as acknowledged, across
memory and file, segment changes and restarts (docs/audit.md#where-a-row-lives)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from audit_support import make_record, spool_depth
from lookup_knowledge.audit.segments import ACK_SUFFIX, SEGMENT_GLOB
from lookup_knowledge.audit.spool import Spool
from lookup_knowledge.domain.audit import AuditRecord


@pytest.fixture
def spools() -> Iterator[list[Spool]]:
    opened: list[Spool] = []
    yield opened
    for spool in opened:
        spool.close()


def open_spool(spools: list[Spool], directory: Path, **options: int) -> Spool:
    spool = Spool(directory, **options)  # type: ignore[arg-type]
    spools.append(spool)
    return spool


def drain(spool: Spool, max_rows: int = 7) -> list[str]:
    """Take and acknowledge everything, the way the writer does; the ids in order."""
    seen: list[str] = []
    while (batch := spool.take(max_rows)) is not None:
        seen += [r.invocation_id for r in batch.records]
        spool.ack(batch)
    return seen


def ids(records: list[AuditRecord]) -> list[str]:
    return [r.invocation_id for r in records]


def test_rows_come_back_in_order_and_leave_once_acknowledged(
    spools: list[Spool], tmp_path: Path
) -> None:
    spool = open_spool(spools, tmp_path)
    rows = [make_record(n) for n in range(30)]
    for row in rows:
        spool.append(row)

    assert spool.depth() == 30
    assert drain(spool) == ids(rows)
    assert spool.depth() == 0
    assert spool.take(10) is None


def test_a_writer_far_behind_reads_the_file_then_returns_to_memory(
    spools: list[Spool], tmp_path: Path
) -> None:
    spool = open_spool(spools, tmp_path, cache_rows=10)
    first = [make_record(n) for n in range(25)]  # more than memory keeps
    for row in first:
        spool.append(row)
    assert drain(spool) == ids(first)

    later = [make_record(n) for n in range(25, 30)]
    for row in later:
        spool.append(row)
    batch = spool.take(10)
    assert batch is not None and ids(batch.records) == ids(later)
    assert batch.records[0] is later[0]  # from memory again, not decoded from the file


def test_a_partial_acknowledgement_offers_the_rest_again(
    spools: list[Spool], tmp_path: Path
) -> None:
    spool = open_spool(spools, tmp_path)
    rows = [make_record(n) for n in range(5)]
    for row in rows:
        spool.append(row)

    batch = spool.take(5)
    assert batch is not None
    spool.ack(batch, 2)

    assert spool.depth() == 3
    assert drain(spool) == ids(rows[2:])


def test_a_drained_segment_is_replaced_and_deleted_past_its_size(
    spools: list[Spool], tmp_path: Path
) -> None:
    spool = open_spool(spools, tmp_path, rotate_bytes=2000)
    for n in range(20):
        spool.append(make_record(n))
    before = {p.name for p in tmp_path.glob(SEGMENT_GLOB)}

    drain(spool)
    spool.append(make_record(20))

    after = {p.name for p in tmp_path.glob(SEGMENT_GLOB)}
    assert before and not before & after
    assert spool.depth() == 1


def test_a_full_segment_is_sealed_and_its_rows_still_come_first(
    spools: list[Spool], tmp_path: Path
) -> None:
    spool = open_spool(spools, tmp_path, max_segment_bytes=3000)
    rows = [make_record(n) for n in range(12)]
    for row in rows:
        spool.append(row)

    assert len(list(tmp_path.glob(SEGMENT_GLOB))) > 1
    assert drain(spool, max_rows=5) == ids(rows)


def test_a_restart_resumes_after_what_was_acknowledged(spools: list[Spool], tmp_path: Path) -> None:
    spool = open_spool(spools, tmp_path)
    rows = [make_record(n) for n in range(10)]
    for row in rows:
        spool.append(row)
    batch = spool.take(4)
    assert batch is not None
    spool.ack(batch)
    assert list(tmp_path.glob("*" + ACK_SUFFIX))
    spool.close()  # or killed: the .ack file says how far the database has the rows

    assert spool_depth(tmp_path) == 6
    again = open_spool(spools, tmp_path)
    assert drain(again) == ids(rows[4:])
    assert list(tmp_path.glob(SEGMENT_GLOB)) == []


def test_a_live_spools_segments_are_not_adopted_by_another(
    spools: list[Spool], tmp_path: Path
) -> None:
    first = open_spool(spools, tmp_path)
    first.append(make_record(1))

    second = open_spool(spools, tmp_path)

    assert (second.depth(), second.adopt_orphans(), first.depth()) == (0, 0, 1)
