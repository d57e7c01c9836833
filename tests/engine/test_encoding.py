"""Pages not written in UTF-8 are read in the encoding their bytes were most likely written in."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.encoding import decode_page
from lookup_knowledge.engine.index import KnowledgeIndex
from lookup_knowledge.engine.markdown import make_document_id, parse_document

GBK_PAGE = (
    "# 磁盘满了怎么办\n\n## 现象\n\n- 节点磁盘使用率超过 90%，容器日志写不进去。\n"
    "- kubelet 开始驱逐 Pod。\n\n## 处理\n\n1. 清理 /var/log 下的旧日志。\n"
)
FRENCH = "# Dépannage du réseau\n\nLe nœud ne répond plus. Vérifiez la configuration réseau.\n"
GERMAN = "# Überlastung\n\nDer Knoten ist überlastet; prüfen Sie die Größe der Warteschlange.\n"


@pytest.mark.parametrize(
    ("text", "written", "read"),
    [
        (GBK_PAGE, "gbk", "gb18030"),
        ("# 证书过期\n\n检查 ca.crt 是否过期。\n", "gb18030", "gb18030"),  # a short page
        (FRENCH, "cp1252", "cp1252"),  # œ is Windows-1252's, not Latin-1's
        (GERMAN, "latin-1", "cp1252"),  # the same letters in both
        ("# Disk\n\nThe node’s disk is “full” — clean up.\n", "cp1252", "cp1252"),
        (GBK_PAGE, "utf-16", "utf-16-le"),  # Python writes a byte order mark first
        (GBK_PAGE, "utf-8-sig", "utf-8"),
        (GBK_PAGE, "utf-32", "utf-32-le"),
        (GBK_PAGE, "utf-16-le", "utf-16-le"),  # no mark: its zero bytes tell
        (GERMAN, "utf-16-be", "utf-16-be"),
    ],
)
def test_a_page_is_read_in_the_encoding_it_was_written_in(
    text: str, written: str, read: str
) -> None:
    decoded, encoding = decode_page(text.encode(written))

    assert (decoded, encoding) == (text, read)


def test_a_utf8_page_with_a_stray_byte_stays_utf8() -> None:
    raw = GBK_PAGE.encode() + "café".encode("latin-1")  # one Latin-1 é pasted at the end

    decoded, encoding = decode_page(raw)

    assert encoding == "utf-8"
    assert decoded == GBK_PAGE + "caf\ufffd"


def test_latin1_bytes_never_read_as_chinese() -> None:
    # Accented letters followed by ASCII ones would decode as rare GB18030 characters.
    text = "Réseau élevé: prévoir à côté. " * 20

    assert decode_page(text.encode("latin-1")) == (text, "cp1252")


def test_undefined_windows_1252_bytes_read_as_latin1() -> None:
    raw = b"# x\n\n\x81\x8d\x8f\x90\x9d caf\xe9\n"

    assert decode_page(raw) == (raw.decode("latin-1"), "latin-1")


@given(st.binary(max_size=300))
def test_any_bytes_decode(raw: bytes) -> None:
    text, encoding = decode_page(raw)

    assert isinstance(text, str)
    assert encoding in {"utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"} | {
        "gb18030",
        "cp1252",
        "latin-1",
    }


def test_a_gbk_page_is_found_by_its_chinese_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "disk.md").write_bytes(GBK_PAGE.encode("gbk"))
    (tmp_path / "other.md").write_text("# Redis memory\n\nEviction and maxmemory.\n")

    with caplog.at_level(logging.WARNING, logger="lookup_knowledge.engine.markdown"):
        index = KnowledgeIndex(load_documents(tmp_path))
    hits = index.search("磁盘满了 清理日志", top_k=1).hits

    assert hits and hits[0].chunk.source == "disk.md"
    assert "disk.md is not UTF-8: read as gb18030" in caplog.text


def test_only_a_page_read_in_another_encoding_gets_another_id() -> None:
    utf8 = GBK_PAGE.encode()
    gbk = GBK_PAGE.encode("gbk")

    assert parse_document("a.md", utf8).document_id == make_document_id("a.md", utf8)
    assert parse_document("a.md", gbk).document_id != make_document_id("a.md", gbk)
