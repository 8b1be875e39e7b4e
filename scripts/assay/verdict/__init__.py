"""The one verdict (wave 4 §1): `decide(run_dir, options)` is the gate's decision — open or closed,
and every reason — for every surface that shows one: gate.py (with and without --baseline), the
viewer, the pytest session and assay.api (through gate.py), draft_report.py, compare's and the
runner's `--baseline auto` (which runs count as open), run_history.py, and `candidate.py keep` (each run's
own gate; a holdout run's look budget, `holdout_look_reason`). None of them computes a
decision or a reason of its own; tests/test_one_verdict.py holds that.

One case's part in it is `assay.report.gate_case.case_gate`; the run's close rules are
`assay.report.gate_reasons` in the order `assay.report.gate.evaluate` checks them.
"""

from .decide import (GateOptions, check_failed, decide, decision_dict, gate_open, holdout_look_reason,  # noqa: F401
                     outside_inputs)
