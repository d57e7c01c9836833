"""The embedded py-rag compatible engine and its bundled knowledge base.

corpus.py    find the Markdown files (a folder, or the bundled `kb/`)
markdown.py  front matter, heading sections, bounded chunks, stable ids
tokenize.py  Chinese (jieba/rjieba) and Latin tokens, stopwords
scoring.py   the absolute quality_score and what 0.75 / 0.5 mean
index.py     BM25 recall, grading, ordering
app.py       py-rag API v1 over HTTP: create_engine_app, run_standalone
"""

from lookup_knowledge.engine.app import create_engine_app, run_standalone
from lookup_knowledge.engine.corpus import KnowledgeBaseError

__all__ = ["KnowledgeBaseError", "create_engine_app", "run_standalone"]
