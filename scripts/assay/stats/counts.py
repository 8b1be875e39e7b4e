"""The counts table (contracts §5.8): one definition of every number in results.json.

`summarize(records, ...)` is used by the runner when it writes results.json AND by
`run_cases.py --verify` when it recounts from the case directories, so the two can
never disagree by construction. A record is a `cases/<id>/verdict.json` dict.

| field | counts | canaries | skipped | infra |
|---|---|---|---|---|
| n | non-canary cases selected (finished) | out | in | in |
| attempted | cases sent (once per case, whatever k) | in | out | in |
| passes, failures | scored cases: the only pass-rate denominator | out | out | out |
| gating_failures | failures with gating true (absent = true) | out | out | out |
| infra_rate | infra_errors / (n - skipped) | out | out | - |
| crash_rate | crashes / attempted | in | out | in |
| canaries | {n, passed (pass^k), failed, not_verified} | only | - | - |
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping


# The keys summarize() owns; --verify recounts exactly these.
COUNT_KEYS = (
    "n", "attempted", "passes", "failures", "gating_failures", "unscored", "skipped",
    "infra_errors", "infra_incomplete", "crashes", "infra_rate", "crash_rate",
    "repeated_5xx", "scorer_errors", "canaries", "holdout", "layers",
    "unscorable_layers", "unjudged", "hollow_layers", "by_kind", "judged", "undeclared_tools",
    "route_from_response", "record_id_shape", "result_source", "unproven_refusals", "answer_absent",
    "answer_not_text", "answer_echo",
)


def cases_phrase(n_cases: Any, n_canaries: Any) -> str:
    """How every tool says how big a run is: `12 cases + 2 canaries` (one wording everywhere)."""
    def part(n: Any, one: str, many: str) -> str:
        ok = isinstance(n, int) and not isinstance(n, bool)
        return f"{n if ok else 'n/a'} {one if n == 1 else many}"
    return f"{part(n_cases, 'case', 'cases')} + {part(n_canaries, 'canary', 'canaries')}"


def stopped_line(stopped: Mapping[str, Any]) -> str:
    """The one sentence every tool says about a fail-fast stop."""
    n = stopped.get("fail_fast")
    return (f"the run stopped early after {stopped.get('gating_failures')} gating failure(s) (--fail-fast {n}); "
            f"{stopped.get('not_run')} case(s) not run, never counted as passed")


def summarize(records: Iterable[dict], *, status: str, missing_artifacts: list) -> dict:
    """results.json `summary` from verdict.json records (any order; the result is order-free
    but for ties, which go to the first record in the order given: plan order).

    The fold is `stats.tally.Tally` (the runner folds each record as it finishes): by_kind
    splits conversations (and simulated users, with their `outcomes`) from single-turn cases,
    present only when the run has one; `judged` counts the judged layers (calibrated,
    provisional and why, judge usage over every case, instability per rubric pin, pairwise);
    `undeclared_tools`, `route_from_response`, `result_source` and `record_id_shape` are present only when some
    case has them; `unproven_refusals` only when a gating refusal passed on an HTTP 4xx alone for an identity
    no case of the run got a 2xx for; `answer_absent` only when a gating case that asserts nothing about the
    answer got a 2xx with no answer at the adapter's <answer> path; `answer_not_text` only when a gating case's
    text checks were not scored because its <answer> leaf was an object or a list (score.answer_leaf);
    `answer_echo` only when a gating case's must_contain entries were not scored because the answer was the
    user's turn word for word."""
    from .tally import Tally
    return Tally().add_all(records).summary(status=status, missing_artifacts=missing_artifacts)
