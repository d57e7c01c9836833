"""Retrieval and pipeline evaluation over golden cases (`lookup-knowledge eval`).

cases.py     the golden cases (document-level expectations) and the pipeline cases
fixtures.py  recorded py-rag answers: files, the replaying and the recording transports
runner.py    one query through the real adapter → postprocess → pack → assemble → project
checks.py    the behaviour assertions every case is judged by
metrics.py   Hit@k, Recall@k, MRR, nDCG@k at document level; grade calibration
suite.py     every case run, judged and aggregated
baseline.py  the baseline and the diff of a run against it
report.py    reports/latest.md
cli.py       `lookup-knowledge eval [--live [URL]] [--record] [--update-baseline] ...`
"""
