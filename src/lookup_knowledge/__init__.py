"""lookup-knowledge: governed, verifiable knowledge-base evidence for LLM agents."""

__version__ = "0.1.0"
