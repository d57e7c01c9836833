"""Adapters: the outside world (py-rag, Redis, SQL) behind the ports of `domain.ports`."""
