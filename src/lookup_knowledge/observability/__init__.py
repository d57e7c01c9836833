"""Metrics, structured logs and request ids: what an operator watches."""
