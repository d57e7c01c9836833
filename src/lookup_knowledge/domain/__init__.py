"""Frozen domain types, the error tree and the ports: the inside of the service."""
