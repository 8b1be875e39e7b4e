"""Optimize bookkeeping: candidates recorded before an edit, reverted with a verified blob,
kept only on the paired keep rule (training first, then the holdout)."""
