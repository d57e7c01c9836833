"""Random ids drawn in batches (domain/ids.py): uuid4's format, unique, never shared by a fork."""

from __future__ import annotations

import multiprocessing
import threading
import uuid

from lookup_knowledge.domain import ids
from lookup_knowledge.domain.ids import random_hex


def test_an_id_is_a_version_4_uuid_in_32_hex_digits() -> None:
    for _ in range(600):  # past a batch
        value = random_hex()
        parsed = uuid.UUID(hex=value)
        assert parsed.hex == value and len(value) == 32
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_ids_drawn_from_many_threads_never_repeat() -> None:
    drawn: list[list[str]] = [[] for _ in range(8)]

    def draw(into: list[str]) -> None:
        into.extend(random_hex() for _ in range(2000))

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [value for into in drawn for value in into]
    assert len(set(everything)) == len(everything) == 16000


def _child_ids(queue: multiprocessing.Queue[list[str]]) -> None:
    queue.put([random_hex() for _ in range(10)])


def test_a_forked_child_draws_fresh_bytes_not_its_parents_batch() -> None:
    random_hex()  # the parent now holds a batch with ids to spare
    assert ids._at < len(ids._pool)
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[list[str]] = context.Queue()
    child = context.Process(target=_child_ids, args=(queue,))
    child.start()
    from_child = queue.get(timeout=30)
    child.join(30)
    from_parent = [random_hex() for _ in range(10)]
    assert not set(from_child) & set(from_parent)
