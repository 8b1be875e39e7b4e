"""Modes, selection, building and validating plan.json."""
