"""`lookup-knowledge eval`: run the golden cases, diff against the baseline, write latest.md.

    lookup-knowledge eval                      offline: replay the recorded fixtures
    lookup-knowledge eval --live [URL]         ask a running py-rag (the embedded one if no URL)
    lookup-knowledge eval --record [--live URL] re-record the fixtures, then run offline
    lookup-knowledge eval --update-baseline    accept this run as the new baseline

Exit codes: 0 pass, 1 regression or behaviour failure, 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from lookup_knowledge.evaluation.baseline import (
    DEFAULT_TOLERANCE,
    Baseline,
    BaselineError,
    Comparison,
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
from lookup_knowledge.evaluation.fixtures import FixtureError, RecordingTransport
from lookup_knowledge.evaluation.report import render_markdown
from lookup_knowledge.evaluation.runner import RunConfig, pyrag_over
from lookup_knowledge.evaluation.suite import (
    METRIC_LABELS,
    SuiteResult,
    record_fixtures,
    replayed_from,
    run_golden,
    run_pipeline_cases,
    shared,
    summarize,
)

EVAL_DIR = Path("eval") / "rag-retrieval"
EMBEDDED = "embedded"
EMBEDDED_URL = "http://embedded-pyrag"

PASS, FAIL, USAGE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Paths:
    root: Path

    @property
    def base(self) -> Path:
        return self.root / EVAL_DIR

    @property
    def golden(self) -> Path:
        return self.base / "cases" / "golden-cases.json"

    @property
    def pipeline(self) -> Path:
        return self.base / "cases" / "pipeline-cases.json"

    @property
    def fixtures(self) -> Path:
        return self.base / "fixtures"

    @property
    def baseline(self) -> Path:
        return self.base / "reports" / "baseline.json"

    @property
    def latest(self) -> Path:
        return self.base / "reports" / "latest.md"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lookup-knowledge eval",
        description="Retrieval and pipeline evaluation over the golden cases in "
        "eval/rag-retrieval/ (offline over the recorded fixtures unless --live).",
    )
    parser.add_argument(
        "--root", type=Path, default=None, help="repository root (default: the current folder)"
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
    paths = Paths(args.root if args.root is not None else Path.cwd())
    if not paths.golden.is_file():
        return _usage(
            parser,
            f"no {EVAL_DIR / 'cases' / 'golden-cases.json'} under {paths.root}: run from the "
            "repository root or pass --root",
        )
    try:
        golden = load_golden_cases(paths.golden)
        pipeline = load_pipeline_cases(paths.pipeline) if paths.pipeline.exists() else ()
        baseline = load_baseline(paths.baseline)
    except (CaseFileError, BaselineError) as exc:
        return _usage(parser, str(exc))
    return asyncio.run(_evaluate(args, paths, golden, pipeline, baseline))


async def _evaluate(
    args: argparse.Namespace,
    paths: Paths,
    golden: tuple[GoldenCase, ...],
    pipeline: tuple[PipelineCase, ...],
    baseline: Baseline | None,
) -> int:
    config = RunConfig.defaults()
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
            return FAIL
        where = _shown(paths.fixtures, paths)
        print(f"recorded {len(written)} fixtures from {_label(source)} into {where}")
        live = None  # then evaluate exactly what was recorded

    if live is None:
        source_label = f"recorded fixtures (`{EVAL_DIR.as_posix()}/fixtures/`)"
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
            return FAIL
        save_baseline(paths.baseline, current)
        print(f"baseline written: {_shown(paths.baseline, paths)}")
        baseline = current
    comparison = compare(current, baseline, tolerance=args.tolerance)
    paths.latest.parent.mkdir(parents=True, exist_ok=True)
    paths.latest.write_text(
        render_markdown(suite, comparison, source_label=source_label), encoding="utf-8"
    )
    _print_summary(suite, comparison, source_label)
    print(f"report: {_shown(paths.latest, paths)}")
    return PASS if comparison.passed else FAIL


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


def _print_summary(suite: SuiteResult, comparison: Comparison, source_label: str) -> None:
    positives = sum(1 for r in suite.golden if not r.case.is_negative)
    print(
        f"eval: {len(suite.golden)} golden cases ({positives} with expected documents, "
        f"{len(suite.golden) - positives} negative) and {len(suite.pipeline)} pipeline cases; "
        f"answers from {source_label}"
    )
    print(
        "  "
        + "  ".join(
            f"{METRIC_LABELS[m.name]} {m.current:.3f}" + (f" ({m.delta:+.3f})" if m.delta else "")
            for m in comparison.metrics
            if m.current is not None
        )
    )
    for level, precision in suite.calibration.by_level.items():
        if precision.count:
            print(f"  graded {level}: top hit expected in {precision.correct}/{precision.count}")
    known = {d.case_id for d in comparison.known_failures}
    print(f"  behaviour: {len(suite.failed)} failing cases ({len(known)} known in the baseline)")
    for delta in comparison.new_failures:
        print(f"  NEW FAILURE {delta.case_id}: {', '.join(delta.checks)}")
    for metric in comparison.regressed_metrics:
        print(
            f"  REGRESSED {METRIC_LABELS[metric.name]}: {metric.baseline:.3f} → "
            f"{metric.current:.3f} (tolerance {comparison.tolerance:g})"
        )
    for metric in comparison.improved_metrics:
        name = METRIC_LABELS[metric.name]
        print(f"  improved {name}: {metric.baseline:.3f} → {metric.current:.3f}")
    for delta in comparison.fixed:
        print(f"  fixed {delta.case_id}: {', '.join(delta.checks)}")
    if not comparison.has_baseline:
        print("  no baseline yet: `lookup-knowledge eval --update-baseline` records one")
    print("PASS" if comparison.passed else "FAIL")


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


def _shown(path: Path, paths: Paths) -> str:
    try:
        return path.relative_to(paths.root).as_posix()
    except ValueError:
        return str(path)


def _usage(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return USAGE
