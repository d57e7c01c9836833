"""Retrieval and pipeline evaluation (`lookup-knowledge eval`).

The product (cases, running, metrics):

cases.py      the golden cases of the tuning set and the pipeline cases
devset.py     the development set: cases per corpus, tune/holdout split, where corpora live
fixtures.py   recorded py-rag answers: files, the replaying and the recording transports
runner.py     one query through the real adapter → postprocess → pack → assemble → project
checks.py     the behaviour assertions every golden case is judged by
metrics.py    Hit@k, Recall@k, MRR, nDCG@k at document level; grade calibration
scorecard.py  the figures the retrieval targets use, over any set of outcomes
suite.py      every golden case run, judged and aggregated
sets.py       the evaluation sets side by side: tuning set, development tune/holdout halves
baseline.py   the tuning set's baseline and the diff of a run against it

Reporting:

report.py       reports/latest.md (the tuning set against its baseline)
sets_report.py  var/eval/sets.md and the console table (every set side by side)
console.py      what the command prints
locations.py    where cases are found and reports written, from any working directory
cli.py          `lookup-knowledge eval [--live [URL]] [--record] [--split ...] ...`
"""
