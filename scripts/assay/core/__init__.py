"""Shared primitives: version, ids, canonical JSON, atomic writes, the error type."""
