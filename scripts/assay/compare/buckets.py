"""The bucket rule: every paired case id lands in exactly one bucket (wave 3 §3; runner contract
§20.1). Defined once; compare.json, compare.html, the gate and the report all read it from here.

First match wins:

1. `only_in_base` / `only_in_candidate`: the id is in one run only (an added or removed case).
2. `expectation_changed`: both runs recorded the case's `case_sha256` and they differ (the case,
   a rubric it pins, the request shape or the judge changed): never newly failing or passing.
3. both verdicts scored (pass / fail):
   - pass → pass `still_passing`; fail → fail `still_failing`;
   - the verdict flipped and the only layer that changed verdict is a judged layer that flipped on
     an unchanged answer and unchanged material (`judge_flip` on the pair): `judge_flip`, the
     judge's noise and not the app's change;
   - pass → fail `newly_failing`; fail → pass `newly_passing`.
4. scored in one run only (unscored, infra_error, infra_incomplete or skipped in the other):
   `changed_unscored`.
5. scored in neither: `still_unscored`.
"""

from __future__ import annotations

SCORED = ("pass", "fail")
# Display order: what needs a look first.
BUCKETS = ("newly_failing", "newly_passing", "judge_flip", "expectation_changed", "changed_unscored",
           "still_failing", "only_in_candidate", "only_in_base", "still_unscored", "still_passing")
MEANING = {
    "newly_failing": "pass in the base, fail in the candidate: a regression",
    "newly_passing": "fail in the base, pass in the candidate: a fix",
    "judge_flip": "the verdict changed only because a judged layer flipped on the same answer and material: "
                  "the judge's noise, not the app's change",
    "expectation_changed": "the case itself changed between the runs (its case_sha256 differs): read it, "
                           "not the app",
    "changed_unscored": "scored in one run, unscored / infra / skipped in the other",
    "still_failing": "fail in both",
    "only_in_candidate": "only in the candidate run (an added case)",
    "only_in_base": "only in the base run (a removed case)",
    "still_unscored": "scored in neither run",
    "still_passing": "pass in both",
}
HEADLINE_WORDS = {"newly_failing": "newly failing", "newly_passing": "newly passing", "judge_flip": "judge flip",
                  "expectation_changed": "case edited"}


def bucket_of(base_verdict: str | None, candidate_verdict: str | None, *, case_changed: bool | None,
              judge_only: bool) -> str:
    """The one bucket of a case id. `None` verdict: the id is absent from that run.
    `case_changed`: True / False / None (unknown: a run without case hashes; bucketed by verdict).
    `judge_only`: every layer that changed verdict is a judge flip on unchanged answer and material."""
    if base_verdict is None and candidate_verdict is None:
        raise ValueError("a case id must be in at least one run")
    if candidate_verdict is None:
        return "only_in_base"
    if base_verdict is None:
        return "only_in_candidate"
    if case_changed is True:
        return "expectation_changed"
    b, c = base_verdict in SCORED, candidate_verdict in SCORED
    if b and c:
        if base_verdict == candidate_verdict:
            return "still_passing" if base_verdict == "pass" else "still_failing"
        if judge_only:
            return "judge_flip"
        return "newly_failing" if candidate_verdict == "fail" else "newly_passing"
    if b or c:
        return "changed_unscored"
    return "still_unscored"


def headline(counts: dict[str, int], judge_flips: int) -> str:
    """"2 newly failing, 5 newly passing, 1 judge flip, 3 cases edited, 4 still failing" (zeros left
    out); nothing changed: "no verdict changed", with "(4 still failing)" when some fail in both."""
    parts = []
    for key in ("newly_failing", "newly_passing"):
        if counts.get(key):
            parts.append(f"{counts[key]} {HEADLINE_WORDS[key]}")
    if judge_flips:
        parts.append(f"{judge_flips} judge flip{'s' if judge_flips != 1 else ''}")
    if counts.get("expectation_changed"):
        n = counts["expectation_changed"]
        parts.append(f"{n} case{'s' if n != 1 else ''} edited")
    for key, word in (("changed_unscored", "newly (un)scored"), ("only_in_candidate", "added"),
                      ("only_in_base", "removed")):
        if counts.get(key):
            parts.append(f"{counts[key]} {word}")
    # what is still broken, beside what changed: "1 newly passing" alone read as good news while a
    # gating case still failed (the viewer trial)
    still = f"{counts['still_failing']} still failing" if counts.get("still_failing") else ""
    if not parts:
        return f"no verdict changed ({still})" if still else "no verdict changed"
    return ", ".join(parts + ([still] if still else []))
