"""`lookup-knowledge eval`: every evaluation set side by side, the tuning set against its baseline.

    lookup-knowledge eval                      tuning set from its fixtures, dev tune halves
    lookup-knowledge eval --live [URL]         ask a running py-rag (the embedded one if no URL)
    lookup-knowledge eval --record [--live URL] re-record the tuning set's fixtures, then run
    lookup-knowledge eval --update-baseline    accept this run as the tuning set's new baseline
    lookup-knowledge eval --split holdout|all  also (or only) the development holdout halves
    lookup-knowledge eval --only dev --corpus k8s-practice-zh   one development corpus alone
    lookup-knowledge eval --only dev --writer zh2   the case files of one writer alone

The tuning set is the golden cases of eval/rag-retrieval/ (gated by the baseline); the
development sets of eval/dev/ run through the embedded engine in process and are reported,
not gated. Exit codes: 0 pass, 1 regression or behaviour failure, 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from lookup_knowledge.evaluation.baseline import (
    DEFAULT_TOLERANCE,
    Baseline,
    BaselineError,
    compare,
    load_baseline,
    save_baseline,
    snapshot,
)
from lookup_knowledge.evaluation.cases import (
    CaseFileError,
    GoldenCase,
    PipelineCase,
    load_golden_cases,
    load_pipeline_cases,
)
from lookup_knowledge.evaluation.console import print_sets, print_tuning_summary
from lookup_knowledge.evaluation.devset import SPLITS, DevCorpus, MissingCorpus, load_dev_corpora
from lookup_knowledge.evaluation.fixtures import FixtureError, RecordingTransport
from lookup_knowledge.evaluation.locations import GOLDEN_DIR, Paths, find_root
from lookup_knowledge.evaluation.report import render_markdown
from lookup_knowledge.evaluation.runner import RunConfig, pyrag_over
from lookup_knowledge.evaluation.sets import EvalSet, run_dev_corpus, tuning_set
from lookup_knowledge.evaluation.sets_report import render_sets_markdown
from lookup_knowledge.evaluation.suite import (
    record_fixtures,
    replayed_from,
    run_golden,
    run_pipeline_cases,
    shared,
    summarize,
)

EMBEDDED = "embedded"
EMBEDDED_URL = "http://embedded-pyrag"

PASS, FAIL, USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge eval",
        description="Retrieval evaluation: the tuning set (eval/rag-retrieval/, offline over "
        "the recorded fixtures unless --live) and the development sets (eval/dev/), side by "
        "side.",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="repository root (default: the checkout this package runs from, else the "
        "current folder)",
    )
    parser.add_argument(
        "--live",
        nargs="?",
        const=EMBEDDED,
        default=None,
        metavar="URL",
        help="ask a running py-rag at URL; without URL the embedded engine, in process",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="re-record every fixture (from the embedded engine, or --live URL), then run",
    )
    parser.add_argument(
        "--update-baseline",
        action="store_true",
        help="write this run as reports/baseline.json (known failures included)",
    )
    parser.add_argument(
        "--split",
        choices=(*SPLITS, "all"),
        default="tune",
        help="which half of the development sets to run (default: tune; holdout only when "
        "asked, and reported in aggregate only)",
    )
    parser.add_argument(
        "--only",
        choices=("tuning", "dev"),
        default=None,
        help="run only the tuning set, or only the development sets",
    )
    parser.add_argument(
        "--corpus",
        action="append",
        default=None,
        metavar="NAME",
        help="development corpus to run (repeatable; default: every one exported here)",
    )
    parser.add_argument(
        "--writer",
        action="append",
        default=None,
        metavar="NAME",
        help="development case files to run, by writer: cases/<corpus>.<NAME>.json "
        "(repeatable; default: every file)",
    )
    parser.add_argument(
        "--corpora-dir",
        type=Path,
        default=None,
        help="where the development corpora are exported (default: <root>/var/corpora)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the untracked reports (default: <root>/var/eval)",
    )
    parser.add_argument(
        "--tolerance",
        type=_fraction,
        default=DEFAULT_TOLERANCE,
        help=f"largest accepted drop of a gated metric (default {DEFAULT_TOLERANCE})",
    )
    parser.add_argument(
        "--target-precision",
        type=_fraction,
        default=0.9,
        help="precision the suggested PRECISE threshold must reach (default 0.9)",
    )
    parser.add_argument(
        "--reference-precision",
        type=_fraction,
        default=0.5,
        help="precision the suggested REFERENCE threshold must reach (default 0.5)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else USAGE
    if args.live not in (None, EMBEDDED) and not args.live.startswith(("http://", "https://")):
        return _usage(parser, f"--live takes an http(s) URL, got {args.live!r}")
    if args.update_baseline and args.live is not None and not args.record:
        return _usage(
            parser,
            "the baseline is recorded from the fixtures: use --record (with --live URL to "
            "record from that py-rag) together with --update-baseline",
        )
    if args.only == "dev" and (args.record or args.update_baseline):
        return _usage(parser, "--record and --update-baseline act on the tuning set")
    paths = Paths(find_root(args.root), args.out, args.corpora_dir)
    golden: tuple[GoldenCase, ...] = ()
    pipeline: tuple[PipelineCase, ...] = ()
    baseline: Baseline | None = None
    corpora: tuple[DevCorpus, ...] = ()
    missing: tuple[MissingCorpus, ...] = ()
    try:
        if args.only != "dev":
            if not paths.golden.is_file():
                return _usage(
                    parser,
                    f"no {paths.shown(paths.golden)} under {paths.root}: pass --root "
                    "(the repository root)",
                )
            golden = load_golden_cases(paths.golden)
            pipeline = load_pipeline_cases(paths.pipeline) if paths.pipeline.exists() else ()
            baseline = load_baseline(paths.baseline)
        if args.only != "tuning" and paths.dev.is_dir():
            corpora, missing = load_dev_corpora(paths.dev, paths.corpora, args.writer)
    except (CaseFileError, BaselineError) as exc:
        return _usage(parser, str(exc))
    if args.corpus:
        known = {c.name for c in corpora} | {m.name for m in missing}
        unknown = sorted(set(args.corpus) - known)
        if unknown:
            return _usage(parser, f"no development cases for corpus {', '.join(unknown)}")
        corpora = tuple(c for c in corpora if c.name in args.corpus)
        missing = tuple(m for m in missing if m.name in args.corpus)
    if args.writer and args.only != "tuning" and not corpora and not missing:
        return _usage(parser, f"no development case file by writer {', '.join(args.writer)}")
    if args.only == "dev" and not corpora and not missing:
        return _usage(parser, f"no development cases under {paths.dev}")
    return asyncio.run(_evaluate(args, paths, golden, pipeline, baseline, corpora, missing))


async def _evaluate(
    args: argparse.Namespace,
    paths: Paths,
    golden: tuple[GoldenCase, ...],
    pipeline: tuple[PipelineCase, ...],
    baseline: Baseline | None,
    corpora: tuple[DevCorpus, ...],
    missing: tuple[MissingCorpus, ...],
) -> int:
    config = RunConfig.defaults()
    code = PASS
    sets: list[EvalSet] = []
    source_label = "-"
    if args.only != "dev":
        code, tuning, source_label = await _tuning(args, paths, golden, pipeline, baseline, config)
        if tuning is not None:
            sets.append(tuning)
    if corpora and args.live not in (None, EMBEDDED):
        print(f"development sets skipped: they run on the embedded engine, not {args.live}")
        corpora = ()
    splits = SPLITS if args.split == "all" else (args.split,)
    for corpus in corpora:
        sets.extend(await run_dev_corpus(corpus, splits, config))
    if corpora or missing:
        paths.out.mkdir(parents=True, exist_ok=True)
        paths.sets_report.write_text(
            render_sets_markdown(sets, missing, source_label=source_label), encoding="utf-8"
        )
        print_sets(sets, missing)
        print(f"report of every set: {paths.shown(paths.sets_report)}")
    return code


async def _tuning(
    args: argparse.Namespace,
    paths: Paths,
    golden: tuple[GoldenCase, ...],
    pipeline: tuple[PipelineCase, ...],
    baseline: Baseline | None,
    config: RunConfig,
) -> tuple[int, EvalSet | None, str]:
    """The golden cases against the baseline; writes the tuning-set report."""
    live: str | None = args.live
    if args.record:
        source = live or EMBEDDED
        try:
            async with _transport(source) as (transport, base_url):
                written = await record_fixtures(
                    golden,
                    RecordingTransport(transport),
                    base_url=base_url,
                    recorded_from=_label(source),
                    fixtures_dir=paths.fixtures,
                    config=config,
                )
        except (httpx.HTTPError, FixtureError) as exc:
            print(f"recording from {_label(source)} failed: {exc!r}", file=sys.stderr)
            return FAIL, None, _label(source)
        print(
            f"recorded {len(written)} fixtures from {_label(source)} into "
            f"{paths.shown(paths.fixtures)}"
        )
        live = None  # then evaluate exactly what was recorded

    if live is None:
        source_label = f"recorded fixtures (`{GOLDEN_DIR.as_posix()}/fixtures/`)"
        results = await run_golden(golden, replayed_from(paths.fixtures, config), config)
    else:
        source_label = _label(live)
        async with (
            _transport(live) as (transport, base_url),
            pyrag_over(transport, config, base_url=base_url) as client,
        ):
            results = await run_golden(golden, shared(client), config)
    pipeline_results = await run_pipeline_cases(pipeline, config)
    suite = summarize(
        "fixtures" if live is None else _label(live),
        config,
        results,
        pipeline_results,
        target_precision=args.target_precision,
        reference_precision=args.reference_precision,
    )

    current = snapshot(suite)
    if args.update_baseline:
        broken = [r.case.id for r in suite.failed if any(f.check == "error" for f in r.failures)]
        if broken:
            print(
                "not updating the baseline: these cases could not run: " + ", ".join(broken),
                file=sys.stderr,
            )
            return FAIL, tuning_set(results), source_label
        save_baseline(paths.baseline, current)
        print(f"baseline written: {paths.shown(paths.baseline)}")
        baseline = current
    comparison = compare(current, baseline, tolerance=args.tolerance)
    # Only the offline run over the committed fixtures rewrites the tracked report: it is
    # deterministic. A live run's report lands in the untracked output folder.
    report = paths.latest if live is None else paths.live_latest
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(
        render_markdown(suite, comparison, source_label=source_label), encoding="utf-8"
    )
    print_tuning_summary(suite, comparison, source_label)
    print(f"tuning-set report: {paths.shown(report)}")
    return (PASS if comparison.passed else FAIL), tuning_set(results), source_label


@asynccontextmanager
async def _transport(source: str) -> AsyncIterator[tuple[httpx.AsyncBaseTransport, str]]:
    """The embedded engine in process, or a py-rag over the network."""
    if source == EMBEDDED:
        from lookup_knowledge.engine.app import create_engine_app

        yield httpx.ASGITransport(app=create_engine_app()), EMBEDDED_URL
    else:
        transport = httpx.AsyncHTTPTransport()
        try:
            yield transport, source
        finally:
            await transport.aclose()


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value:g}")
    return value


def _label(source: str) -> str:
    return "the embedded engine (in process)" if source == EMBEDDED else source


def _usage(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return USAGE
