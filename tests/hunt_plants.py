"""The green-path hunt's plants in a copy of the example helpdesk's state dir (tests/test_green_path_hunt.py).

Each function plants one regression class the app's own --break switch does not: budgets below what
the app spends, a case edited after the baseline, a case whose input changed after the recording, a
hollow case, a failed canary (with its own small walk: a failed canary stops the run), and a refund
case judged by a rubric whose agreement with a person is measured here before the broken run.
"""

from __future__ import annotations

import json
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

from fakeapp import run_runner
from helpers import run_script
from hunt_paths import edit, plan, pytest_session
from assay.calibrate.label_page import page_items

EDITED = "c-34a94041"        # passes on the broken app; edited after the baseline so that it fails
RESENT = "c-cd37392f"        # its input edited after the recording: the replay cannot answer it
HOLLOW = "c-feec9bb9"        # its expectations replaced by an HTTP 200: nothing asserted beyond liveness
CANARY = "c-a2194744"        # canary-invoice-status: made to fail (a phrase the app never says)
CALIBRATED = "c-e7a0c001"    # added: a refund judged by refund-arrival-v1, calibrated against a person
CRASHED = "c-e7a0c002"       # added: an export request, which the broken app answers with the same 500 every time
STRANGER = "c-e7a0c003"      # added after the baseline: a refusal case whose tenant is typo'd (the app: 403)
OBJECT_REPLY = "c-e7a0c004"  # added: an invoice as JSON, the broken app's answer an object (its text check unscored)
ARRIVAL = "refund-arrival-v1"
NEVER_SAID = "zz-never-said-by-the-app"

RUBRIC = """---
rubric_id: refund-arrival
version: 1
nodes:
  - id: states-arrival
    criterion: The reply says when the refund will arrive (a date, or a number of business days).
---

# refund-arrival (the green-path hunt's calibrated rubric)
"""
def _billing_case(cid: str, why: str, content: str, expect: str) -> str:
    """A billing case the hunt's copy adds (acme's customer, smoke and full, reviewed)."""
    return (f"# {why}\nid: {cid}\nunit: billing\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\n"
            "metamorphic_parent: null\ntemplate_id: null\ndataset_version_added: 1\norigin: synthetic\n"
            "review: {status: accepted, by: Dana Whitfield, at: '2026-11-21'}\n"
            "identity: {user: acme, role: customer}\n"
            f"input:\n  messages:\n  - role: user\n    content: {content}\n  session: fresh\nexpect:\n{expect}")


CASE = _billing_case(CALIBRATED, "refund-arrival: only the calibrated rubric sees the missing arrival date",
                     "Please refund 15 on invoice INV-1001",
                     "  route: billing\n  answer:\n    must_contain: ['/Refund RF-[0-9A-F]{6} of 15\\.00 USD/']\n"
                     f"    rubric: [{ARRIVAL}]\n")
CRASH_CASE = _billing_case(CRASHED, "export: the broken app crashes on it (the same HTTP 500 every attempt)",
                           "Please export my invoices", "  route: billing\n")
# the due date (a right answer holds it) and the JSON's shape: the broken app sends the JSON as an object in the
# answer field, so the text check is not scored (the schema holds): the case passes, the run's summary says why not
OBJECT_CASE = _billing_case(OBJECT_REPLY, "invoice-json: the date a right answer holds, and the JSON's shape",
                            "Give me invoice INV-1002 as JSON",
                            "  route: billing\n  answer:\n    must_contain: ['2026-12-20']\n"
                            "  format:\n    json_schema: {type: object, required: [invoice_id, due]}\n")
# a denial the author wrote as an HTTP 403, for a tenant typo'd: the app's "unknown tenant" 403 passes it
STRANGER_CASE = _billing_case(STRANGER, "another tenant's invoice, denied with a 403 (its tenant typo'd)",
                              "Show me invoice INV-2001",
                              "  http: {status: 403}\n  authz:\n    forbidden_record_ids: [INV-2001]\n"
                              "    expect_refusal: true\n").replace("user: acme,", "user: acmee,")


def add_calibrated_case(state: Path) -> None:
    """The rubric refund-arrival (the judge stand-in's states-arrival node) and one refund case pinning
    it, an export request (the broken app crashes on it: the same 500 on every attempt) and an invoice
    asked for as JSON (the broken app answers it with an object: a text check on it is never scored),
    each counted in the dataset manifest (the linter checks the counts)."""
    (state / "rubrics" / "refund-arrival.md").write_text(RUBRIC, encoding="utf-8")
    _add_cases(state, {CALIBRATED: CASE, CRASHED: CRASH_CASE, OBJECT_REPLY: OBJECT_CASE})


def _add_cases(state: Path, cases: dict[str, str]) -> None:
    """Billing cases (smoke and full, MFT) written and counted in the dataset manifest."""
    import yaml
    for cid, text in cases.items():
        (state / "datasets" / f"{cid}.yaml").write_text(text, encoding="utf-8")
    manifest = state / "datasets" / "dataset.yaml"
    doc = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    doc["cases"] += len(cases)
    doc["splits"]["smoke"] += len(cases)
    doc["splits"]["full"] += len(cases)
    doc["coverage_grid"]["by_unit"]["billing"]["total"] += len(cases)
    doc["coverage_grid"]["by_unit"]["billing"]["MFT"] += len(cases)
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def calibrate(state: Path, base: Path, env: dict) -> None:
    """refund-arrival-v1's agreement with a person, measured as references/calibration.md does it: a
    one-case run of the broken app (the judge fails its reply), label.py's page over it and the
    baseline (the judge passes the clean reply), the person's labels on the page's items (scripted, as
    the calibration demo's: the reply says when the money is back, or not), score_agreement.py --write
    at floors below the defaults (two pairs; the gate then says so) -> judge/calibration.json. The
    person labels only this rubric's items: refund-eta-v1 stays provisional."""
    work = state / "work"
    r = run_script("make_plan", work / "converted.json", "--mode", "targeted", "--case", CALIBRATED, "--judge",
                   "--state-dir", state, "-o", work / "label-plan.json", "--run-id", "targeted-20261204T000050Z")
    assert r.rc == 0, r.stdout
    labelled = Path(r.json["out"])
    r = run_runner("--plan", work / "label-plan.json", "--out", labelled, "--progress", "never", env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
    page = work / "label.html"
    r = run_script("label", base, labelled, "-o", page, "--reviewer", "Dana Whitfield")
    assert r.rc == 0, r.stdout
    data, items = page_items(page.read_text(encoding="utf-8"))   # the judge's view, as the page's export unseals it
    lines = [{"case_id": it["case_id"], "rubric_id": it["rubric_id"], "node_id": it["node_id"],
              "label": "pass" if "will be back on your card" in data["materials"][it["material"]]["answer"] else "fail",
              "judge_label": it["judge_label"], "reviewer": "Dana Whitfield", "ts": "2026-12-04T00:00:55Z",
              "batch": data["batch"], "answer_sha256": it["answer_sha256"]}
             for it in items if it["rubric_id"] == ARRIVAL]
    assert sorted(x["label"] for x in lines) == ["fail", "pass"], lines
    (state / "annotations").mkdir(exist_ok=True)
    (state / "annotations" / f"{data['batch']}.jsonl").write_text(
        "".join(json.dumps(x, sort_keys=True) + "\n" for x in lines), encoding="utf-8")
    r = run_script("score_agreement", state / "annotations", "--write", state / "judge" / "calibration.json",
                   "--min-pairs", "2", "--min-per-class", "1")
    assert r.rc == 0 and r.json["calibrated_rubrics"] == [ARRIVAL], r.stdout


def plant(state: Path) -> None:
    """Budgets below what the app spends, a case edited to fail now, a hollow case, a refusal case whose
    identity the app does not know (answered 403 "unknown tenant": a refusal by status alone)."""
    _add_cases(state, {STRANGER: STRANGER_CASE})
    edit(state / "profile.yaml", "max_cost_per_case: 0.0005", "max_cost_per_case: 0.0000001")
    edit(state / "profile.yaml", "max_p95_latency_s: 8", "max_p95_latency_s: 0.000001")
    edited = state / "datasets" / f"{EDITED}.yaml"
    text = edited.read_text(encoding="utf-8")
    assert "must_contain:" in text, text
    edited.write_text(text.replace("must_contain: [", f"must_contain: [{NEVER_SAID}, ", 1)
                      if "must_contain: [" in text else
                      re.sub(r"must_contain:\n(\s+)- ", rf"must_contain:\n\1- {NEVER_SAID}\n\1- ", text, 1),
                      encoding="utf-8")
    hollow = state / "datasets" / f"{HOLLOW}.yaml"
    text = hollow.read_text(encoding="utf-8")
    hollow.write_text(text[:text.index("\nexpect:\n")] + "\nexpect:\n  http: {status: 200}\n", encoding="utf-8")


def resend(state: Path) -> None:
    """The replay cannot answer a case whose input changed since the recording."""
    edit(state / "datasets" / f"{RESENT}.yaml", "content: ", "content: (edited) ")


@contextmanager
def hollow_aside(state: Path):
    """The suite with the hollow case as shipped (the pytest session of the other rows: with the hollow
    case, the session is refused at collection, which is the hollow row's own pytest path)."""
    from helpdesk_util import HELPDESK
    case = state / "datasets" / f"{HOLLOW}.yaml"
    hollow = case.read_text(encoding="utf-8")
    shutil.copy2(HELPDESK / ".assay" / "datasets" / case.name, case)
    try:
        yield
    finally:
        case.write_text(hollow, encoding="utf-8")


@contextmanager
def failed_canary(state: Path):
    canary = state / "datasets" / f"{CANARY}.yaml"
    text = canary.read_text(encoding="utf-8")
    edit(canary, "    - paid\n", f"    - paid\n    - {NEVER_SAID}\n")
    try:
        yield
    finally:
        canary.write_text(text, encoding="utf-8")


def canary_live(state: Path, env: dict, tmp: Path) -> dict:
    """The failed canary's live runs, before the other plants: one run (the canaries run first, alone,
    and the failed one stops it: exit 4, nothing else sent) and the pytest session. {path: run dir |
    decision}. Not its shards (~2 CPU-s more): every shard runs every canary, and the merge of a shard
    that failed its canary beside one that passed it is tests/test_shard_run.py's (aborted_canary, the
    failed record kept, the gate naming it); nor the store merge, the same merge over the same records."""
    with failed_canary(state):
        live = Path(plan(state, "--run-id", "smoke-20261204T000010Z")["out"])
        r = run_runner("--plan", state / "work" / "plan.json", "--out", live, "--progress", "never", env=env)
        assert r.rc == 4, (r.stdout, r.stderr)
        session = pytest_session(state, tmp, env)
    return {"gate": live, "gate --baseline auto": live, "viewer": live, "api.gate": live, "pytest": session,
            "report": live, "report --baseline auto": live,
            "gate, its check kept": live}


def canary_derived(state: Path, broken: Path, env: dict, plan_extra: tuple[str, ...]) -> dict:
    """The broken run (its canaries passed) replayed and rescored against the suite whose canary now fails."""
    with failed_canary(state):
        replayed = Path(plan(state, "--run-id", "smoke-20261204T000500Z", *plan_extra)["out"])
        r = run_runner("--plan", state / "work" / "plan.json", "--out", replayed, "--replay", broken,
                       "--progress", "never", env=env)   # the app is stopped: nothing may call it
        assert r.rc == 4, (r.stdout, r.stderr)
        rescored = state / "reports" / "smoke-20261204T000600Z"
        r = run_script("rescore", broken, "--out", rescored, *plan_extra)
        assert r.rc == 4, r.stdout
    return {"replayed": replayed, "rescored": rescored}
