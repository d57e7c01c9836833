"""Count Redis round trips: every write of a request batch to a socket, by any async client.

redis-py sends one command, or a whole pipeline, with one `send_packed_command` and then waits
for the replies, so each call is one round trip. Connection set-up (HELLO, CLIENT SETINFO) goes
the same way and counts too: warm the client up before measuring.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio.connection import AbstractConnection

# The first bulk string of each RESP array: the command name.
_COMMAND_NAME = re.compile(rb"\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n")


@dataclass
class RoundTrips:
    """The batches sent while counting; each is the list of command names it held."""

    batches: list[list[str]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.batches)

    @property
    def commands(self) -> list[str]:
        return [name for batch in self.batches for name in batch]


@contextmanager
def count_round_trips() -> Iterator[RoundTrips]:
    """Within the block, record every request batch any async Redis connection sends."""
    seen = RoundTrips()
    original = AbstractConnection.send_packed_command

    async def counting(self: AbstractConnection, command: Any, *args: Any, **kwargs: Any) -> None:
        seen.batches.append(_names(command))
        await original(self, command, *args, **kwargs)

    AbstractConnection.send_packed_command = counting  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        AbstractConnection.send_packed_command = original  # type: ignore[method-assign]


def _names(command: bytes | str | Iterable[bytes]) -> list[str]:
    if isinstance(command, str):
        raw = command.encode()
    elif isinstance(command, bytes):
        raw = command
    else:
        raw = b"".join(command)
    return [m.group(1).decode().upper() for m in _COMMAND_NAME.finditer(raw)]
