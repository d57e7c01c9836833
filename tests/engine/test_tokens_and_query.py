"""Tokens, query reading and the data-file lexicon: the mechanisms recall and grading rest on."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lookup_knowledge.engine import bags as bags_module
from lookup_knowledge.engine import query as query_module
from lookup_knowledge.engine import scoring, tokenize
from lookup_knowledge.engine.bags import Bags, bags
from lookup_knowledge.engine.corpus import load_documents
from lookup_knowledge.engine.fuzzy import Neighbours, damerau_levenshtein
from lookup_knowledge.engine.index import KnowledgeIndex, NoEvidenceBasis
from lookup_knowledge.engine.lexicon import Lexicon
from lookup_knowledge.engine.query import Known
from lookup_knowledge.engine.scoring import Level

LEXICON = Lexicon.load()


def words(text: str, *, search_mode: bool = False) -> list[str]:
    return [t.text for t in tokenize.tokens(text, LEXICON.stopwords, search_mode=search_mode)]


def test_log_noise_never_becomes_a_token() -> None:
    line = (
        "2024-06-12T03:22:41.118Z 10.0.1.22:10249 pid 482133 req "
        "1c4e9a2b-77d0-4c1e-9a1f-0b9e2c6d5e11 0x104020 7f9c6d5b8 took 1.531872944s refused"
    )

    assert words(line) == ["pid", "req", "took", "refus"]


def test_short_status_codes_stay_tokens() -> None:
    assert words("exit code 137, then 504") == ["exit", "code", "137", "504"]


def test_an_identifier_yields_its_parts_and_its_whole() -> None:
    assert words("KubePodCrashLooping") == ["kube", "pod", "crash", "loop", "kubepodcrashlooping"]
    assert words("fs.inotify.max_user_watches") == [
        "fs",
        "inotifi",
        "max",
        "user",
        "watch",
        "fs.inotify.max_user_watches",
    ]


def test_the_plural_of_capitals_is_its_acronym_not_a_camelcase_part() -> None:
    assert words("two PVCs and the pod IPs") == ["two", "pvc", "pod", "ip"]
    assert words("podIPs") == ["pod", "ip", "podips"]
    assert words("HTTPServer") == ["http", "server", "httpserver"]  # a case change still splits


def test_a_question_about_pvcs_finds_the_page_about_the_pvc(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "pvc.md": "# PVC stuck in Pending\n\nThe PVC waits for a StorageClass.\n",
            "cs.md": "# CS exam notes\n\nThe PV course and its CS credits.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    result = index.search("why are my PVCs pending", top_k=2)

    assert result.hits[0].chunk.source == "pvc.md"


def test_documents_get_chinese_sub_words_queries_do_not() -> None:
    assert {"连接池", "连接"} <= set(words("数据库连接池耗尽", search_mode=True))
    assert "连接" not in words("数据库连接池耗尽")


def test_the_damerau_levenshtein_distance_counts_a_swap_as_one_edit() -> None:
    assert damerau_levenshtein("dsik", "disk", 2) == 1
    assert damerau_levenshtein("replciat", "replic", 2) > 1


def test_a_misspelt_word_is_read_as_the_corpus_word_it_is_nearest_to() -> None:
    neighbours = Neighbours(["consum", "consol", "kafka"], [5, 1, 3])

    assert neighbours.nearest("consumr") == "consum"
    assert neighbours.nearest("kfk") is None  # too short to correct


def small_index(write_docs: Callable[[dict[str, str]], Path]) -> KnowledgeIndex:
    docs = write_docs(
        {
            "kafka.md": "# Kafka consumer lag\n\nConsumer lag grows when consumers are slow.\n",
            "disk.md": "# Disk full\n\nThe disk is full: no space left on device.\n",
            "dns.md": "# DNS resolution\n\nLookups fail with NXDOMAIN or time out.\n",
        }
    )
    return KnowledgeIndex(load_documents(docs))


def test_a_typo_and_an_id_do_not_sink_a_query_whose_words_match(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    index = small_index(write_docs)

    read = index.read("kafka consumre lag on broker-7f9c6d5b8 x187")
    result = index.search("kafka consumre lag on broker-7f9c6d5b8 x187", top_k=5)

    kinds = {c.token: c.known for c in read.concepts}
    assert kinds["consumr"] is Known.TYPO and "x187" not in kinds
    assert result.hits[0].chunk.source == "kafka.md"
    assert result.hits[0].level is Level.PRECISE


def test_a_word_with_a_number_on_its_end_is_read_as_its_letters_the_corpus_holds(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "raid.md": "# RAID array degraded\n\nAn md array lost a member disk.\n",
            "disk.md": "# Disk full\n\nThe disk is full: no space left on device.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))
    line = "md/raid1:md0: Disk failure on sdb1, disabling device. pod qx2lv-x187"

    tokens = {c.token: c.known for c in index.read(line).concepts}

    # `raid1` is the array kind the corpus writes as `raid`; `sdb`, `qx`, `x` it lacks,
    # and `md0`'s two letters are too few to tell from an id's.
    assert tokens["raid"] is Known.KNOWN
    assert not {"raid1", "md0", "sdb", "sdb1", "qx2lv", "x187"} & tokens.keys()
    assert index.search(line, top_k=5).hits[0].chunk.source == "raid.md"


def test_a_chinese_compound_the_corpus_lacks_is_read_as_the_words_it_is_made_of(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "rule.md": "# Rule evaluation errors\n\nThe error message names the failing rule.\n",
            "disk.md": "# Disk full\n\nFree some space on the disk.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    def read(query: str) -> list[tuple[str, Known]]:
        return [(c.token, c.known) for c in index.read(query).concepts]

    # jieba keeps `错误信息` whole; the documents' search mode reads it as `错误` + `信息`.
    assert read("错误信息") == [("错误", Known.KNOWN), ("信息", Known.KNOWN)]
    # `十分` and `分钟` overlap: no reading of the whole, which stays a word the corpus lacks.
    assert read("十分钟") == [("十分钟", Known.UNKNOWN)]
    assert tokenize.tiling("错误信息", {"错误", "信息"}) == ["错误", "信息"]
    assert tokenize.tiling("一大半", {"一大", "大半"}) is None


def test_only_the_first_typo_readings_of_a_query_are_typos(
    write_docs: Callable[[dict[str, str]], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paste of hundreds of unknown words is not compared word by word with the corpus's
    words: past `TYPO_READINGS` of them, an unknown word is one the corpus lacks."""
    index = small_index(write_docs)
    query = "kafka consumre dsik resolutoin lookpus"

    def typos() -> list[str]:
        return [c.token for c in index.read(query).concepts if c.known is Known.TYPO]

    every = typos()
    assert every == ["consumr", "dsik", "resolutoin", "lookpus"]
    monkeypatch.setattr(query_module, "TYPO_READINGS", 2)
    assert typos() == every[:2]


def test_a_typo_is_read_against_the_words_as_written(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "ns.md": "# Namespace stuck terminating\n\nA namespace stays Terminating.\n",
            "tsdb.md": "# TSDB compactions failing\n\nCompactions of blocks fail.\n",
            "part.md": "# Partitions\n\nEach part of the table is one file.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    def reading(query: str) -> dict[str, tuple[Known, tuple[str, ...]]]:
        return {c.token: (c.known, c.variants) for c in index.read(query).concepts}

    # Far from the term `termin`, one edit from the written `terminating`.
    assert reading("namespace terminatng")["terminatng"] == (Known.TYPO, ("termin",))
    assert reading("tsdb compactoins")["compactoin"] == (Known.TYPO, ("compact",))
    assert index.search("namespace stuck terminatng", top_k=1).hits[0].level is Level.PRECISE
    # A word of the language is judged by its length as typed: `parsing` (its stem `pars`,
    # one edit from `part`) is no typo.
    assert reading("parsing error")["pars"][0] is Known.WORD
    assert reading("pods sitting there")["sit"][0] is Known.WORD  # a stem of three letters


def test_written_words_as_far_from_a_typo_fall_to_the_one_whose_stem_is_nearer(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    """`compation` is two edits from both `compactions` and `completion`, the more frequent;
    its stem `compat` is one from `compact` and two from `complet`."""
    docs = write_docs(
        {
            "tsdb.md": "# TSDB compactions failing\n\nCompactions of blocks fail.\n",
            "job.md": "# Job completion\n\nA job's completion is late.\n\n## Completion time\n\n"
            "The completion of the job.\n",
            "job2.md": "# Completion of batches\n\nBatch completion takes an hour.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))
    concepts = {c.token: c for c in index.read("tsdb compation failing").concepts}
    assert concepts["compat"].known is Known.TYPO
    assert concepts["compat"].variants == ("compact",)
    assert index.search("tsdb compation failing", top_k=1).hits[0].chunk.source == "tsdb.md"


def test_the_tie_of_a_typo_reading_comes_before_frequency() -> None:
    neighbours = Neighbours(["completion", "compactions"], [9, 1])
    assert neighbours.nearest("compation") == "completion"  # the more frequent
    nearer = {"completion": 2, "compactions": 1}
    assert neighbours.nearest("compation", nearer.__getitem__) == "compactions"


@pytest.mark.parametrize(
    ("word", "count"),
    [
        *[("两百多个", True), ("十几秒", True), ("一千多台", True), ("二十多", True)],
        *[("几十", True), ("十", True), ("个", False), ("一大堆", False), ("数据", False)],
    ],
)
def test_chinese_counts_are_told_from_words(word: str, count: bool) -> None:
    assert tokenize.is_cjk_count(word) is count


def test_a_chinese_count_weighs_nothing_as_a_number_does(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"disk.md": "# 磁盘满了\n\n磁盘被日志写满，节点上的容器都无法写入。\n"})
    index = KnowledgeIndex(load_documents(docs))

    read = index.read("两百多个节点磁盘满了")
    assert {c.token for c in read.concepts} >= {"节点", "磁盘"}
    assert "两百多个" not in {c.token for c in read.concepts}
    with_count = index.search("两百多个节点磁盘满了", top_k=1).hits
    without = index.search("节点磁盘满了", top_k=1).hits
    assert with_count and without
    assert with_count[0].quality_score == pytest.approx(without[0].quality_score)


def test_a_query_of_unknown_words_and_typos_alone_has_no_candidates(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    index = small_index(write_docs)

    result = index.search("dsik sourdough 12345", top_k=5)

    assert result.hits == ()
    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_log_noise_the_corpus_holds_verbatim_is_evidence(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "local-dns.md": "# Node cache\n\nThe kubelet points pods at 169.254.20.10 for DNS.\n",
            "dns.md": "# Name servers\n\nThe kubelet sets the DNS server of pods.\n",
            "ports.md": "# Ports\n\nAddresses like 10.169.254.20 or 169.254.20.100 are other"
            " hosts.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    read = index.read("kubelet --cluster-dns=169.254.20.10 10.0.5.23:6379")
    kinds = {c.token: c.known for c in read.concepts}
    assert kinds["169.254.20.10"] is Known.SUBSTRING  # held as a whole run of a chunk
    assert "10.0.5.23:6379" not in kinds and "10.0.5.23" not in kinds  # noise here
    graded = index.grade("169.254.20.10")  # a noise token alone, but one the corpus holds
    assert not isinstance(graded, NoEvidenceBasis)
    assert index.chunk(int(graded.candidates[graded.order[0]])).source == "local-dns.md"
    assert index.search("kubelet dns 169.254.20.10", top_k=5).hits[0].chunk.source == (
        "local-dns.md"
    )
    # Inside a longer address or number it is not held.
    assert not any(c.known is Known.SUBSTRING for c in index.read("169.254.20.1").concepts)


def test_noise_runs_are_the_whole_runs_that_are_noise() -> None:
    text = "dns=169.254.20.10 redis 10.0.5.23:6379 pid 482133 exit 137"

    assert tokenize.noise_runs(text) == ["169.254.20.10", "10.0.5.23:6379", "10.0.5.23", "482133"]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("0123456789.:/ -_a\uff11\uff0e\u0661x中,")), max_size=30)
)
def test_noise_runs_skip_only_texts_that_cannot_hold_any(text: str) -> None:
    # The cheap search that skips most texts must never skip a run the full cut finds
    # (full-width digits and dots, `１．２`, count once NFKC-normalized, as the index does).
    text = tokenize.normalize(text)
    whole = [r for r in tokenize.latin_runs(text) if tokenize._DOCUMENTED_NOISE.fullmatch(r)]

    assert tokenize.noise_runs(text) == whole


def test_an_abbreviation_inside_an_identifier_finds_its_document(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "pleg.md": "# KubeletPlegDurationHigh\n\nThe kubelet relist is slow.\n",
            "other.md": "# KubeletDown\n\nThe kubelet is down.\n",
        }
    )

    hits = KnowledgeIndex(load_documents(docs)).search("PLEG", top_k=5).hits

    assert hits[0].chunk.source == "pleg.md"


def test_a_substantive_chunk_beats_an_equally_ranked_stub(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    body = "Check the certificate renewal job and the issuer. " * 6
    docs = write_docs(
        {"a-stub.md": "# Cert expiry\n\nSee b.\n", "b-real.md": f"# Cert expiry\n\n{body}\n"}
    )
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("cert expiry", top_k=5).hits

    assert hits[0].chunk.source == "b-real.md"


def test_the_shipped_glossary_has_only_single_token_entries() -> None:
    assert LEXICON.unusable_entries() == []
    memory = LEXICON.entry_token("memory")
    assert memory in LEXICON.variants("内存") and "内存" in LEXICON.variants(str(memory))


def test_a_deployment_adds_stopwords_and_glossary_lines_next_to_its_docs(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "a.md": "# Widget frobnication\n\nHow the widget frobnicates.\n",
            ".lexicon/stopwords.txt": "# ours\nplease kindly\n",
            ".lexicon/glossary.txt": "部件 widget\n",
        }
    )
    lexicon = Lexicon.load(docs)
    index = KnowledgeIndex(load_documents(docs), lexicon)

    assert "kindly" in lexicon.stopwords and "kindly" not in LEXICON.stopwords
    assert [c.token for c in index.read("kindly widget").concepts] == ["widget"]
    assert index.search("部件", top_k=5).hits[0].chunk.source == "a.md"
    assert [d.source for d in load_documents(docs)] == ["a.md"]  # the lexicon is not indexed


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.text(min_size=1, max_size=300),
        st.sampled_from(["🙂" * 50, "مرحبا بالعالم", "ש" * 4000, "a" * 4000, "?!...,;", "的了吗"]),
    )
)
def test_no_query_crashes_the_engine(query: str) -> None:
    result = BUNDLED.search(query, top_k=5)

    assert all(0.0 <= h.quality_score <= 1.0 for h in result.hits)
    if not result.hits:
        assert result.no_evidence_basis is not None


@pytest.mark.parametrize("query", ["sI 00", "sI", "aB cD"])
def test_a_query_of_whole_names_alone_is_graded_a_number(query: str) -> None:
    # `sI` is a name the corpus holds whole (`si`), with no word to weigh: the shares of an
    # empty scope were NaN, and a NaN grade was returned as evidence.
    graded = BUNDLED.grade(query)
    assert isinstance(graded, NoEvidenceBasis) or not np.isnan(graded.quality).any()
    result = BUNDLED.search(query, top_k=5)
    assert all(0.0 <= h.quality_score <= 1.0 for h in result.hits)
    assert result.hits or result.no_evidence_basis is not None


def test_a_query_of_stopwords_and_noise_only_has_no_candidates() -> None:
    result = BUNDLED.search("how do I ... 2024-06-12 10:41:07 怎么办 0xdeadbeef", top_k=5)

    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("## 2. Look at sessions", "## Look at sessions"),
        ("Steps:\n\n1. Read the pool metrics", "Steps:\n\nRead the pool metrics"),
        ("1) restart it\n 2) watch it\n3、确认超时", "restart it\n watch it\n确认超时"),
        ("1.2. Sub-step", "Sub-step"),
        ("１．\u3000确认超时\n1.确认链路\n1.\xa0check", "确认超时\n确认链路\ncheck"),
    ],
)
def test_the_ordinals_of_headings_and_list_items_are_stripped(text: str, stripped: str) -> None:
    assert tokenize.strip_enumeration(text) == stripped


def test_the_digit_class_is_what_isdigit_accepts() -> None:
    import re

    digit = re.compile(tokenize.DIGIT)
    assert [c for c in map(chr, range(0x110000)) if bool(digit.fullmatch(c)) != c.isdigit()] == []


def _strip_enumeration_line_by_line(text: str) -> str:
    """The rule as first written: every line looked at in Python."""
    import unicodedata

    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.lstrip(" \t#\u3000")[:1].isdigit():
            continue
        line = unicodedata.normalize("NFKC", line)
        if (match := tokenize._ORDINAL.match(line)) is not None:
            lines[i] = match.group(1) + line[match.end() :]
    return "\n".join(lines)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("12.)、 \t#\u3000\n\r①⒈²１ab确认-")), max_size=40))
def test_a_text_without_numbered_lines_is_skipped_with_the_same_result(text: str) -> None:
    assert tokenize.strip_enumeration(text) == _strip_enumeration_line_by_line(text)


@pytest.mark.parametrize(
    "text",
    [
        "1.27 升级到 1.28",
        "10.0.0.1 is the gateway",
        "3 replicas are ready",
        "exit code 137.",
        "1.5GB",
    ],
)
def test_versions_addresses_and_counts_in_prose_keep_their_numbers(text: str) -> None:
    assert tokenize.strip_enumeration(text) == text


def test_a_heading_ordinal_is_no_word_of_the_corpus(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "keys.md": "# Key rotation\n\n## 7. Rotate the keys\n\nRotate the signing keys.\n",
            "disk.md": "# Disk full\n\nThe disk is full.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    assert "7" not in {c.token for c in index.read("rotate keys 7").concepts}
    # A pasted heading is read as the index reads it: its ordinal is no word of the query.
    assert [c.token for c in index.read("7. Rotate the keys").concepts] == ["rotat", "key"]


@pytest.mark.parametrize("query", ["1", "2 3", "1 2 3 ..."])
def test_a_query_of_counts_and_ordinals_alone_has_no_candidates(
    write_docs: Callable[[dict[str, str]], Path], query: str
) -> None:
    docs = write_docs(
        {
            "pool.md": (
                "# Connection pool\n\n## 1. Read the pool metrics\n\nA pool of 2 or 3 "
                "connections per step.\n\n## 2. Find leaks\n\n1. List the sessions.\n"
            ),
            "oom.md": "# OOMKilled\n\nThe container exited with code 137.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    result = index.search(query, top_k=5)

    assert result.no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES
    # A code of three digits is a word of the page that documents it.
    assert [(c.token, c.known) for c in index.read("137").concepts] == [("137", Known.KNOWN)]
    assert index.search("137", top_k=1).no_evidence_basis is not NoEvidenceBasis.NO_CANDIDATES


def test_a_query_of_one_subject_many_pages_hold_has_no_candidates(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    pages = {f"alert{n}.md": f"# Alert {n}\n\nThe exporter logs an error {n}.\n" for n in range(4)}
    pages["conntrack.md"] = "# Conntrack table\n\nThe error is a full conntrack table.\n"
    index = KnowledgeIndex(load_documents(write_docs(pages)))

    def basis(query: str) -> NoEvidenceBasis | None:
        return index.search(query, top_k=5).no_evidence_basis

    # Five pages of five say `error`, none in its title: it names none of them, whatever else
    # the query says that the corpus lacks; one page says `conntrack`, so it, or `error`
    # beside it, does.
    assert basis("Error.") is basis("error, please help!!") is NoEvidenceBasis.NO_CANDIDATES
    assert basis("conntrack") is None
    assert index.search("conntrack error", top_k=5).hits[0].chunk.source == "conntrack.md"
    # A typo stands for a second word: the query is no longer of one subject.
    assert index.read("error conntrak").concepts[1].known is Known.TYPO
    assert basis("error conntrak") is not NoEvidenceBasis.NO_CANDIDATES
    # Every page says `exporter` too, but one is about it: its title holds it.
    pages["exporter.md"] = "# Exporter down\n\nThe exporter is down.\n"
    titled = KnowledgeIndex(load_documents(write_docs(pages)))
    assert titled.search("exporter", top_k=5).hits[0].chunk.source == "exporter.md"
    assert basis("exporter") is NoEvidenceBasis.NO_CANDIDATES  # before: no title held it


def test_a_common_subject_in_a_tenth_of_the_titles_still_names_them(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    def basis(titled: int) -> NoEvidenceBasis | None:
        pages = {
            f"page{n}.md": (f"# Exporter {n}\n" if n < titled else f"# Page {n}\n")
            + f"\nThe exporter of page {n} logs here.\n"
            for n in range(40)
        }
        docs = write_docs(pages)
        return KnowledgeIndex(load_documents(docs)).search("exporter", top_k=5).no_evidence_basis

    # Every page of forty says `exporter`; four titles are a tenth of them: a family of pages
    # about it. Five, and the word is no page's topic any more.
    assert basis(4) is not NoEvidenceBasis.NO_CANDIDATES
    assert basis(5) is NoEvidenceBasis.NO_CANDIDATES


@pytest.mark.parametrize(
    "query",
    [
        "we have an issue in production",
        "something is wrong with the cluster, please help",
        "服务出问题了，帮忙看下",
        "生产环境挂了",
        "what should I check first",
        "no",
    ],
)
def test_a_query_of_discourse_words_alone_has_no_candidates(query: str) -> None:
    # Each of these was answered from some page of the bundled KB, up to PRECISE (0.96).
    assert BUNDLED.search(query, top_k=5).no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_a_question_about_the_knowledge_base_itself_has_no_candidates(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "budget.md": "# Error budget burn\n\nThis runbook lists what to show the team.\n",
            "disk.md": "# Disk full\n\nSee the runbook of the storage team.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    for query in ("list all runbooks", "show me the documentation", "知识库里有什么文档"):
        assert index.search(query, top_k=5).no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES
    assert index.search("error budget runbook", top_k=5).hits[0].chunk.source == "budget.md"


def test_discourse_words_keep_their_weight_beside_a_subject(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "issue.md": "# Widget jam\n\nThe widget has an issue with its gear train.\n",
            "other.md": "# Widget jam\n\nThe widget has a fault in its gear train.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    hits = index.search("widget gear issue", top_k=2).hits
    # The page that says `issue` ranks and grades above its twin: the word counts.
    assert [h.chunk.source for h in hits] == ["issue.md", "other.md"]
    assert hits[0].quality_score > hits[1].quality_score
    assert {c.token for c in index.read("widget issue").concepts if c.discourse} == {"issu"}


def test_a_corpus_identifier_made_of_discourse_words_is_evidence(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "ServiceDown.md": "# ServiceDown\n\nThe service is down for every probe.\n",
            "disk.md": "# Disk full\n\nThe disk is full.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    assert index.search("ServiceDown", top_k=1).hits[0].chunk.source == "ServiceDown.md"
    assert index.search("service down", top_k=1).no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


def test_no_discourse_word_shares_a_glossary_group_with_a_subject() -> None:
    # A subject's equivalent as a discourse word would make its two languages disagree:
    # `resolve` alone finding nothing while `解析` finds the DNS page.
    for group in LEXICON.groups:
        tokens = {t for t in (LEXICON.entry_token(w) for w in group) if t is not None}
        assert tokens <= LEXICON.discourse or not tokens & LEXICON.discourse, group


def test_a_discourse_word_is_marked_whatever_the_corpus_knows_of_it() -> None:
    concepts = {c.token: c for c in BUNDLED.read("help me please").concepts}

    assert concepts["help"].discourse


def test_a_deployment_adds_discourse_words_next_to_its_docs(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "a.md": "# Widget frobnication\n\nThe widget frobnicates on the shop floor.\n",
            ".lexicon/discourse.txt": "# ours\nfloor\n-production  # our askers mean the line\n",
        }
    )
    lexicon = Lexicon.load(docs)
    index = KnowledgeIndex(load_documents(docs), lexicon)

    assert "floor" in lexicon.discourse and "floor" not in LEXICON.discourse
    assert "product" in LEXICON.discourse and "product" not in lexicon.discourse
    assert (
        index.search("shop floor", top_k=5).no_evidence_basis is not NoEvidenceBasis.NO_CANDIDATES
    )
    assert index.search("floor", top_k=5).no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


BUNDLED = KnowledgeIndex(load_documents())


def test_a_structured_log_line_loses_its_keys_and_level_but_keeps_its_values() -> None:
    line = (
        "level=warn ts=2024-02-16T19:48:03.771Z caller=notifier.go:371 component=notifier "
        'msg="Alert notification queue full"'
    )

    assert words(tokenize.strip_log_structure(line)) == [
        "notifi",
        "alert",
        "notif",
        "queue",
        "full",
    ]


def test_json_log_keys_go_and_a_single_setting_stays() -> None:
    json_line = '{"level":"warn","caller":"wal/wal.go:805","msg":"slow fdatasync"}'

    assert words(tokenize.strip_log_structure(json_line)) == ["slow", "fdatasync"]
    assert "max.poll.records" in words(tokenize.strip_log_structure("set max.poll.records=100"))
    # A level outside a structured line is the asker's word, and stays.
    assert "error" in words(tokenize.strip_log_structure("level=error in the kafka logs"))


def test_klog_headers_source_locations_and_url_hosts_are_not_read() -> None:
    line = (
        "E0607 12:01:55.118233       1 reflector.go:147] failed to list leases "
        "from https://mimir.internal.example.net/api/v1/push"
    )

    assert words(tokenize.strip_log_structure(line)) == [
        "fail",
        "list",
        "leas",
        "api",
        "v1",
        "push",
        "api/v1/push",
    ]


def test_dates_spelt_with_day_and_month_names_are_not_read() -> None:
    dmesg = "[Tue Jun 11 02:41:07 2024] ixgbe eno1: NIC Link is Down"
    syslog = "Mar  3 04:18:22 node-3 kernel: Out of memory"
    http = "Date: Tue, 11 Jun 2024 02:41:07 GMT"

    assert words(tokenize.strip_log_structure(dmesg)) == ["ixgb", "eno1", "nic", "link", "down"]
    # syslog: the host that logged the line goes with the date, the program stays
    assert words(tokenize.strip_log_structure(syslog)) == ["kernel", "out", "memori"]
    tagged = "Nov 19 11:20:33 worker-12 kubelet[2214]: PLEG is not healthy"
    assert words(tokenize.strip_log_structure(tagged)) == ["kubelet", "pleg", "healthi"]
    # a host only counts as one before a program's `name:` or `name[pid]:`
    assert "node-3" in words(tokenize.strip_log_structure("Mar 3 04:18:22 node-3 went down"))
    assert words(tokenize.strip_log_structure(http)) == ["date"]
    # without a time of day it is prose: the month and the day stay
    assert words(tokenize.strip_log_structure("failing since Jun 11")) == ["fail", "jun", "11"]


def test_a_time_zone_after_a_clock_time_is_not_read() -> None:
    report = "Heads-up, 2024-08-21 07:58 CEST: prometheus shows 0 alertmanagers since 09:40 UTC"

    assert "cest" in words(report) and "utc" in words(report)
    assert words(tokenize.strip_log_structure(report)) == [
        *("head", "up", "heads-up", "prometheus", "show", "0", "alertmanag")
    ]
    assert words(tokenize.strip_log_structure("paged at 3pm PST (14:05 CET)")) == ["page", "3pm"]
    # a zone's letters elsewhere are words
    assert "west" in words(tokenize.strip_log_structure("west coast nodes"))
    assert "utc" in words(tokenize.strip_log_structure("node clock not in UTC"))


def _counted(text: str) -> Counter[str]:
    return Counter(words(text, search_mode=True))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(
            alphabet=st.sampled_from(list("ab Kube-Pod.x_y:z/数据库连接池满了 \n\t，。0123456789")),
            max_size=40,
        ),
        min_size=1,
        max_size=6,
    )
)
@example(["数据库连接池满了"])  # one CJK run: the segmenter's words hold no separator
@example(["Kube-Pod 数据库", "", "。，", "ab ab 数据库 ab"])  # empty texts, runs met again
def test_batched_bags_count_exactly_the_tokens_of_each_text(texts: list[str]) -> None:
    counted = bags(texts, LEXICON.stopwords, words=())  # no inner compounds: the tokens alone

    for number, text in enumerate(texts):
        mine = counted.unit == number
        got = Counter(
            {
                counted.words[t]: int(c)
                for t, c in zip(counted.term[mine], counted.count[mine], strict=True)
            }
        )
        assert got == _counted(text)


def test_an_identifier_holds_the_compounds_inside_it() -> None:
    inner = tokenize.inner_compounds("KubeDaemonSetMisScheduled")

    assert {"daemonset", "misschedul"} <= set(inner)
    assert "kubedaemonset" not in inner  # two neighbouring parts only
    assert tokenize.inner_compounds("CrashLooping") == ("crashloop",)
    assert tokenize.inner_compounds("daemonset") == ()  # one word: nothing inside it
    assert tokenize.inner_compounds("I/O") == ()  # a join of letters is no word
    assert tokenize.inner_compounds("apps/v1beta1") == ()  # nor one across a version


def test_bags_keep_the_inner_compounds_the_corpus_writes_as_words() -> None:
    texts = ["KubeDaemonSetMisScheduled fires", "the daemonset pods"]

    counted = bags(texts, LEXICON.stopwords)
    first = {counted.words[t] for u, t in zip(counted.unit, counted.term, strict=True) if u == 0}

    assert "daemonset" in first  # some text says `daemonset`: the name holds it
    assert "setmis" not in counted.words  # no text says `setmis`: no term
    alone = bags(texts[:1], LEXICON.stopwords)
    assert "daemonset" not in alone.words  # a corpus that never writes it has no such term
    told = bags(texts[:1], LEXICON.stopwords, words={"daemonset"})
    assert "daemonset" in told.words  # the corpus's words, when given, decide


def test_a_question_finds_the_compound_inside_a_page_name(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "KubeDaemonSetMisScheduled.md": (
                "# KubeDaemonSetMisScheduled\n\n## Meaning\n\nPods run on the wrong nodes.\n"
            ),
            "notes.md": "# Notes\n\nA daemonset runs one pod on each node.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    for question in ("daemonset pods on the wrong nodes", "daemon set pods on the wrong nodes"):
        hits = index.search(question, top_k=2).hits
        assert hits[0].chunk.source == "KubeDaemonSetMisScheduled.md", question
        assert hits[0].quality_score >= 0.75, question
    joined = index.read("daemon set pods")
    assert "daemonset" in joined.wholes and "daemonset" in joined.joined
    assert index.read("daemon set pods, daemon set").wholes.count("daemonset") == 1


def test_a_page_name_asked_names_the_compounds_inside_it(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    pages = {
        "KubeDaemonSetMisScheduled.md": (
            "# KubeDaemonSetMisScheduled\n\n## Meaning\n\nPods run on the wrong nodes.\n"
        ),
    }
    alone = KnowledgeIndex(load_documents(write_docs(pages)))
    notes = {"notes.md": "# Notes\n\nA daemonset runs one pod on each node.\n"}
    told = KnowledgeIndex(load_documents(write_docs({**pages, **notes})))
    coverage = scoring.FEATURES.index("heading_coverage")

    def name_coverage(index: KnowledgeIndex) -> float:
        graded = index.grade("KubeDaemonSetMisScheduled")
        assert not isinstance(graded, NoEvidenceBasis)
        first = int(graded.order[0])
        assert index.chunk(int(graded.candidates[first])).source == "KubeDaemonSetMisScheduled.md"
        return float(graded.features[first][coverage])

    assert "daemonset" in told.read("KubeDaemonSetMisScheduled").joined
    assert "daemonset" not in alone.read("KubeDaemonSetMisScheduled").joined
    # The title's bag holds `daemonset` once the corpus writes it; the name asked holds it
    # too, so the name still covers its own title as fully as where no page says it.
    assert name_coverage(told) == pytest.approx(name_coverage(alone), abs=0.02)


def test_two_words_joined_end_at_a_sentence_not_inside_a_name(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"a.md": "# Notes\n\nThe daemonset runs everywhere.\n"})
    index = KnowledgeIndex(load_documents(docs))

    assert "daemonset" in index.read("pods of the daemon set.").joined
    assert "daemonset" in index.read("daemon set: pods pending").joined
    assert "daemonset" not in index.read("daemon set.name").joined  # inside an identifier
    assert "daemonset" not in index.read("the daemon. Set it").joined  # two sentences
    for mixed in ("daemon set：为什么不调度", "为什么daemon set不调度", "daemon set。"):
        assert "daemonset" in index.read(mixed).joined, mixed  # Chinese text ends a word


def test_a_log_lines_keys_hold_no_compound_of_the_question(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"a.md": "# Notes\n\nThe daemonset runs everywhere.\n"})
    index = KnowledgeIndex(load_documents(docs))

    # `daemon_set.go:147` is where the line was logged, not what it says.
    line = "E0607 12:01:55.118233       1 daemon_set.go:147] sync failed"
    assert "daemonset" not in index.read(line).joined
    assert "daemonset" in index.read("daemon_set pods never start").joined


def test_a_slip_is_of_a_word_the_corpus_writes_not_of_its_stem(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "dns.md": "# Cluster DNS\n\nThe kubedns pods answer every lookup of the cluster.\n",
            "disk.md": "# Disk full\n\nThe disk of the node is full.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))
    known = {c.token: c.known for c in index.read("kubeadm dsik").concepts}

    # `kubeadm` is two edits from the term `kubedn`, but three from `kubedns`, as written.
    assert known["kubeadm"] is not Known.TYPO
    assert known["dsik"] is Known.TYPO  # one edit from `disk`, as written


def test_a_host_name_counts_only_as_far_as_the_corpus_writes_it(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "dns.md": (
                "# DNS timeouts\n\nA service name such as web.default.svc.cluster.local "
                "resolves through CoreDNS; its upstream times out. Images come from "
                "https://registry.k8s.io/v2/.\n"
            ),
            "pay.md": "# Payment partner\n\nThe partner pays the invoice.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    def tokens(query: str) -> set[str]:
        read = index.read(query)
        return {c.token for c in read.concepts} | set(read.wholes)

    # The asker's own host names are where it happened: no `partner`, `pay` or `prod`.
    line = "[ERROR] plugin/errors: 2 api.partner-pay.com. A: read udp i/o timeout"
    assert {"partner", "pay"}.isdisjoint(tokens(line))
    assert "timeout" in tokens(line)
    assert "partner" not in tokens("访问api.partner-pay.com超时了")  # no space around it
    asked = tokens("lookup orders.prod.svc.cluster.local times out")
    assert "prod" not in asked and "order" not in asked
    assert {"svc", "cluster", "local"} <= asked  # the ending the corpus writes stays
    assert {"registri", "k8s"} <= tokens("pull registry.k8s.io/pause fails")  # a URL's host
    assert tokenize.host_endings("from https://registry.k8s.io/v2/ or web.svc.local:53") == {
        "registry.k8s.io",
        "k8s.io",
        "web.svc.local",
        "svc.local",
    }
    assert tokenize.host_endings("a partner pays; see the docs.") == set()
    # Two labels under a public domain are as often a product: left as they are.
    assert "nvidia" in tokens("nvidia.com/gpu resources")


def test_a_slip_is_of_the_written_word_nearest_what_was_typed(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {"rollout.md": "# Rollout\n\nThe revision of the set is old, for some reason.\n"}
    )
    index = KnowledgeIndex(load_documents(docs))
    read = {c.token: c for c in index.read("statefulset revison").concepts}

    # `revison` is two edits from the term `reason` (and from `revis`), one from `revision`.
    assert read["revison"].known is Known.TYPO
    assert read["revison"].variants == ("revis",)


def test_two_words_joined_make_no_question_of_their_own(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs({"a.md": "# Notes\n\nThe setup of the daemonset.\n"})
    index = KnowledgeIndex(load_documents(docs))

    # `set up` is the corpus's `setup`, but says nothing of its own: a stopword query still
    # has no candidates, as it had before the join.
    assert index.search("set up", top_k=1).no_evidence_basis is NoEvidenceBasis.NO_CANDIDATES


# Keys under 5000 leave room for the counts in their low bits; under 2**62 they do not.
@pytest.mark.parametrize("bound", [5000, 2**62])
def test_counts_summed_by_key_match_a_plain_sum(bound: int) -> None:
    rng = np.random.default_rng(7)
    key = rng.integers(0, 5000, 20000)
    count = rng.integers(1, 1000, 20000)

    distinct, summed = bags_module._sum_by_key(key.copy(), count, bound)

    expected: Counter[int] = Counter()
    for k, c in zip(key.tolist(), count.tolist(), strict=True):
        expected[k] += c
    assert distinct.tolist() == sorted(expected)
    assert [int(v) for v in summed.tolist()] == [expected[k] for k in sorted(expected)]


def test_bags_regrouped_by_document_sum_their_chunks() -> None:
    counted = bags(["redis memory", "memory full", "disk full"], LEXICON.stopwords)

    documents = counted.regroup(np.array([0, 0, 1]), 2)
    units, terms, counts = _rows(documents)
    first = {counted.words[t]: c for u, t, c in zip(units, terms, counts, strict=True) if u == 0}

    assert first == {"redi": 1, "memori": 2, "full": 1}


def _rows(counted: Bags) -> tuple[list[int], list[int], list[int]]:
    return counted.unit.tolist(), counted.term.tolist(), counted.count.tolist()


def test_inflections_the_stemmer_splits_find_each_other() -> None:
    stem = tokenize.stem
    assert stem("rebalancing") != stem("rebalances")  # Snowball's own split
    assert stem("rebalances") in tokenize.inflected_stems("rebalancing")
    assert stem("rebalancing") in tokenize.inflected_stems("rebalances")
    assert stem("reference") in tokenize.inflected_stems("referencing")
    assert stem("experience") in tokenize.inflected_stems("experiencing")
    assert stem("referencing") not in tokenize.inflected_stems("referencing")  # its own
    assert stem("store") not in tokenize.inflected_stems("storage")  # no derivation
    assert tokenize.inflected_stems("pods") == ()  # too short to tell a suffix
    assert tokenize.inflected_stems("k8s_pods") == ()


def test_a_query_word_is_found_under_an_inflection_the_stemmer_splits(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    docs = write_docs(
        {
            "kafka.md": "# Kafka consumer group storms\n\nThe group rebalances often.\n",
            "secrets.md": "# Secrets\n\nA pod whose reference to a secret is broken.\n",
        }
    )
    index = KnowledgeIndex(load_documents(docs))

    read = index.read("kafka consumers keep rebalancing")
    assert [c.known for c in read.concepts if c.token == tokenize.stem("rebalancing")] == [
        Known.KNOWN
    ]
    hits = index.search("pod referencing a secret", top_k=3).hits
    assert hits and hits[0].chunk.source == "secrets.md"


def test_an_inflection_of_an_english_word_the_corpus_lacks_is_no_name(
    write_docs: Callable[[dict[str, str]], Path],
) -> None:
    # `referencing` stems to a form the dictionary lacks (`referenc`), but it is an
    # inflection of `reference`: an unknown word, not a tool the corpus never mentions.
    docs = write_docs({"disk.md": "# Disk full\n\nThe disk of the node is full.\n"})
    index = KnowledgeIndex(load_documents(docs))

    read = index.read("node disk full after referencing istio")
    known = {c.token: c.known for c in read.concepts}
    assert known[tokenize.stem("referencing")] is Known.UNKNOWN
    assert known["istio"] is Known.ABSENT


def test_no_is_a_word_other_negations_are_stopwords() -> None:
    """`no leader`, `no space left` name the symptom (docs/retrieval.md#tokens)."""
    assert words("etcdserver: no leader") == ["etcdserv", "no", "leader"]
    assert words("etcdNoLeader") == ["etcd", "no", "leader", "etcdnoleader"]
    assert words("the pod is not ready and never came back") == ["pod", "readi", "came", "back"]


def test_a_page_about_no_leader_outranks_one_about_leader_election(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "no-leader.md").write_text(
        "# etcd has no leader\n\nThe members cannot elect a leader: check the network between"
        " them and the disk latency of each member.\n",
        encoding="utf-8",
    )
    (docs / "election.md").write_text(
        "# etcd leader election\n\nHow members elect a leader, and why leader changes happen"
        " when the leader is slow: heartbeat and election timeouts of each member.\n",
        encoding="utf-8",
    )
    index = KnowledgeIndex(load_documents(docs))
    graded = index.grade("E0402 apiserver error: etcdserver: no leader")
    assert not isinstance(graded, NoEvidenceBasis)
    assert index.chunk(int(graded.candidates[int(graded.order[0])])).source == "no-leader.md"
