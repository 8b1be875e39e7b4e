"""Mining production traces for candidate cases (mine_traces.py)."""
