"""Run-vs-run comparison (wave 3 §3): pair two runs' cases by id, put each pair in exactly one
bucket, say what changed in it (layers, answer, trajectory, turns, the judge) and why.

sides.py reads one run dir; diffs.py holds the pure text and trajectory diffs; pairs.py compares
one pair; buckets.py is the bucket rule; document.py builds compare.json; html.py renders
compare.html; baseline.py resolves `--baseline auto` (the one decision, `assay.verdict.gate_open`, handed in);
gate_words.py says the gate on regressions (assay.verdict decides it);
report_section.py is the report's comparison section.
"""
