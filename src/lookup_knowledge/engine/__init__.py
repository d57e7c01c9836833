"""The embedded py-rag compatible engine and its bundled knowledge base.

corpus.py    find the Markdown files (a folder, or the bundled `kb/`)
markdown.py  front matter, heading sections, bounded chunks, stable ids
tokenize.py  Chinese (jieba/rjieba) and Latin tokens, stopwords
scoring.py   the absolute quality_score and what 0.75 / 0.5 mean
index.py     BM25 recall, grading, ordering
index_store.py  a built index kept on disk between starts
app.py       py-rag API v1 over HTTP: create_engine_app, run_standalone
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lookup_knowledge.engine.corpus import KnowledgeBaseError

if TYPE_CHECKING:
    from lookup_knowledge.engine.app import create_engine_app, run_standalone

__all__ = ["KnowledgeBaseError", "create_engine_app", "run_standalone"]


def __getattr__(name: str) -> Any:
    # The HTTP face (FastAPI, numpy, the index) is imported when asked for, not with the
    # package: `serve` looks at the stored index (engine.index_store) before any of it.
    if name in {"create_engine_app", "run_standalone"}:
        from lookup_knowledge.engine import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
