#!/usr/bin/env python3
"""`make demo CALIBRATE=1`: the judge-calibration loop on the helpdesk example, offline, at the
DEFAULT floors (100 labelled pairs, 10 per class, TPR and TNR 0.90, kappa 0.60).

On a fresh copy of the example's state dir (under its work/ folder, so the example itself never
becomes calibrated), with the demo's labelling set (calibration_set.json: 30 refund requests, each
a case pinning refund-eta-v1) added to its smoke split:

    run 1, app clean (smoke, judged, provisional) -> label.py page -> labels (sitting 1)
    -> score_agreement.py: not calibrated yet, and how many more labels of which class would unlock it
    run 2, app BROKEN -> label.py over both runs: only the answers not labelled yet (a changed
       answer is a new pair; an unchanged one is not asked again) -> labels (sitting 2)
    -> score_agreement.py --write: calibrated at the default floors, from labels of distinct answers
    run 3, app BROKEN: the rubric is calibrated, its fails count in the gate

The labels stand in for a person and say so (demo_labels.json: by case, node and the app the answer
came from; the judge's verdicts and answer hashes are read from the page, as its export does). The
stand-in judge and the person disagree on the three over-the-cap refunds (the judge reads the invoice
amount as a refunded one), so the agreement is measured, not assumed. Exit 0 when the loop showed what
it should (provisional, then calibrated at the default floors), 2 when a step failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from demo import (App, Child, RUNNER_FINISHED, SCRIPTS, StepFailed, last_json, run_step, say,  # noqa: E402
                  shown)

LABELS = HERE / "demo_labels.json"
# The demo calibrates a two-judge ensemble (the stand-in and its stricter variant): a node's verdict
# is theirs only when both agree, and the calibration is of the pair as configured. The three runs
# make some 380 judge calls: both stand-ins are served by one local process over the Chat Completions
# wire (`judge_standin.py --serve`, an `openai` judge at a local base_url; a `command` judge would
# start one process a call). The calibration is bound to this config (its base_url's port too):
# the sidecar the demo writes is for this demo's judge.
ENSEMBLE = """# calibrate_demo.py: a two-judge ensemble of stand-ins (judge_standin.py --serve), not models
judges:
  - {{provider: openai, base_url: "{url}/v1", model: standin-judge-1, timeout_s: 20}}
  - {{provider: openai, base_url: "{url}/b/v1", model: standin-judge-2, timeout_s: 20}}
aggregate: unanimous
max_concurrency: 4
"""
LABELLING_SET = HERE / "calibration_set.json"
COPY_IGNORE = shutil.ignore_patterns("work", "reports", "annotations", "calibration.json", "holdout-looks*.jsonl")


def labelling_case(row: dict) -> dict:
    """One refund request of the labelling set as a case of the copy's smoke split."""
    return {"id": row["id"], "unit": "billing", "split": ["smoke"], "category": "happy", "test_type": "MFT",
            "metamorphic_parent": None, "template_id": None, "dataset_version_added": 1, "origin": "synthetic",
            "review": {"status": "accepted", "by": "Dana Whitfield", "at": "2026-11-30"},
            "identity": {"user": row["user"], "role": row["role"]},
            "input": {"messages": [{"role": "user", "content": f"Please refund {row['amount']:g} on invoice "
                                                                f"{row['invoice']}"}], "session": "fresh"},
            "expect": {"route": "billing", "answer": {"rubric": ["refund-eta-v1"]}}}


def fresh_state(example_state: Path) -> Path:
    root = example_state / "work" / "calibrate-demo"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    state = root / ".assay"
    shutil.copytree(example_state, state, ignore=COPY_IGNORE)
    # the example's command stand-ins (judge, simulated user) run relative to its state dir (../judge_standin.py)
    for extra in HERE.glob("*.py"):
        shutil.copy(extra, root / extra.name)
    rows = json.loads(LABELLING_SET.read_text(encoding="utf-8"))["cases"]
    for row in rows:
        (state / "datasets" / f"{row['id']}.yaml").write_text(json.dumps(labelling_case(row), indent=1) + "\n",
                                                            encoding="utf-8")
    count_labelling_set(state / "datasets" / "dataset.yaml", len(rows))
    return state


def count_labelling_set(manifest: Path, n: int) -> None:
    """The copy's dataset.yaml counts the added cases (the linter checks the manifest against the files)."""
    import yaml
    doc = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    doc["cases"] += n
    doc["splits"]["smoke"] += n
    billing = doc["coverage_grid"]["by_unit"]["billing"]
    billing["total"] += n
    billing["MFT"] += n
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def judged_line(gate_text: str) -> str:
    for line in gate_text.splitlines():
        if line.strip().startswith("judged"):
            return line.strip()
    return "(no judged line)"


def one_run(state: Path, env: dict[str, str], label: str) -> tuple[Path, str, int]:
    work = state / "work"
    work.mkdir(exist_ok=True)
    converted = work / "converted.json"
    run_step("convert_suite", [str(SCRIPTS / "convert_suite.py"), str(state), "-o", str(converted),
                               "--split-dir", str(work / "split")], env)
    plan_file = work / "plan.json"
    for _ in range(3):  # run ids have one-second resolution: never reuse a finished run's directory
        plan = last_json(run_step("make_plan", [str(SCRIPTS / "make_plan.py"), str(converted), "--mode", "smoke",
                                                "--judge", "--state-dir", str(state), "-o", str(plan_file)],
                                  env).stdout)
        out = Path(plan["out"])
        if not out.exists():
            break
        time.sleep(1.05)
    runner = run_step("run_cases", [str(SCRIPTS / "run_cases.py"), "--plan", str(plan_file), "--out", str(out),
                                    "--progress", "never"], env, ok=set(RUNNER_FINISHED))
    gate = run_step("gate", [str(SCRIPTS / "gate.py"), str(out)], env, ok={0, 1})
    say(f"  {label:<15} {plan['run_id']}: {plan.get('cases')} cases, runner exit {runner.returncode}, "
        f"gate {'open' if gate.returncode == 0 else 'CLOSED'}")
    say(f"                  {judged_line(gate.stdout)}")
    return out, gate.stdout, gate.returncode


def run_with_app(state: Path, broken: bool, label: str) -> tuple[Path, str, int]:
    app = App(state / "work", broken=broken, flaky=False)
    try:
        url = app.start()
        env = dict(os.environ, HELPDESK_BASE_URL=url, HELPDESK_OTLP_FILE=str(app.otlp_file))
        env.pop("PYTHONPATH", None)
        return one_run(state, env, label)
    finally:
        app.stop()


class JudgeServer(Child):
    """judge_standin.py --serve as a child process (both stand-ins of the ensemble), as the demo's App."""

    def __init__(self, work: Path) -> None:
        self.port_file = work / "judge-standin.port.json"
        self.log_file = work / "judge-standin.log"

    def start(self, timeout_s: float = 20.0) -> str:
        self.launch([sys.executable, "-S", str(HERE / "judge_standin.py"), "--serve", str(self.port_file)])
        return self.wait_ready("start judge stand-in", "it", "not listening", timeout_s)


def page_items(page: Path) -> tuple[str, list[dict]]:
    """The batch id and items of label.py's page as its export reads them back (the judge's view is sealed
    in the page until a person has labelled an item: assay.calibrate.label_page.page_items unseals it, as
    the page's own export does, for this scripted stand-in of a person)."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from assay.calibrate.label_page import page_items as unsealed
    try:
        data, items = unsealed(page.read_text("utf-8"))
    except (ValueError, KeyError) as exc:
        raise StepFailed(f"step 'label' failed: {page} holds no item data ({exc})") from None
    return data["batch"], items


def scripted_labels(page: Path, annotations: Path, app: str) -> tuple[Path, int]:
    """Write the person's labels (demo_labels.json) on the page's items in the page's export format:
    each line carries the answer hash the page showed, canaries their earlier label."""
    person = json.loads(LABELS.read_text(encoding="utf-8"))
    truth = {(row["case_id"], row["node_id"], row["app"]): row["label"] for row in person["labels"]}
    batch, items = page_items(page)
    lines = []
    for it in items:
        label = truth.get((it["case_id"], it["node_id"], app), truth.get((it["case_id"], it["node_id"], "any")))
        if label is None:
            continue  # an item the person did not label (skipped on the page)
        line = {"case_id": it["case_id"], "rubric_id": it["rubric_id"], "node_id": it["node_id"],
                "label": label, "judge_label": it["judge_label"], "reviewer": person["reviewer"],
                "ts": person["ts"], "batch": batch, "answer_sha256": it["answer_sha256"]}
        if it.get("canary"):
            line.update(canary=True, expected_label=it["expected"])
        lines.append(line)
    if not lines:
        raise StepFailed("step 'scripted labelling' failed: no page item matches demo_labels.json; the example's "
                         "judged cases changed, update demo_labels.json")
    annotations.mkdir(parents=True, exist_ok=True)
    path = annotations / f"{batch}.jsonl"
    path.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines), encoding="utf-8")
    return path, sum(1 for x in lines if not x.get("canary"))


def sitting(state: Path, runs: list[Path], app: str, env: dict[str, str]) -> None:
    """One labelling sitting: label.py over `runs`, then the scripted labels of what it asks."""
    page = state / "work" / "label.html"
    lab = last_json(run_step("label", [str(SCRIPTS / "label.py"), *map(str, runs), "-o", str(page),
                                       "--reviewer", "Dana Whitfield"], env).stdout)
    ann, n = scripted_labels(page, state / "annotations", app)
    say(f"  label           {len(runs)} run(s): {lab.get('to_label')} items to label (judge says "
        f"{lab.get('by_judge_verdict')}), {lab.get('already_labelled')} labelled before on the same answer "
        f"({lab.get('canaries')} back as canaries), {lab.get('answer_changed')} whose answer changed")
    say(f"  labels          {n} labels -> {shown(ann)} (the scripted stand-in for a person, demo_labels.json)")


def agreement(state: Path, env: dict[str, str], *extra: str) -> dict:
    out = last_json(run_step("score_agreement", [str(SCRIPTS / "score_agreement.py"), str(state / "annotations"),
                                                 *extra], env).stdout)
    for pin, r in sorted((out.get("rubrics") or {}).items()):
        say(f"  score_agreement {pin} at the default floors: {r['pairs']} pairs over {out.get('distinct_answers')} "
            f"distinct answers ({r['human_fail']} human fail, {r['human_pass']} human pass), TPR {r['tpr']}, "
            f"TNR {r['tnr']}, kappa {r['kappa']}: calibrated {r['calibrated']}"
            + (f"; {r['more_labels_sentence']}" if r.get("more_labels_sentence") else ""))
    return out


def loop(example_state: Path) -> int:
    state = fresh_state(example_state)
    say(f"assay calibration demo: a copy of the example state at {shown(state)}, with the labelling set "
        f"({shown(LABELLING_SET)}) in its smoke split")
    (state / "work").mkdir(exist_ok=True)
    judges = JudgeServer(state / "work")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        url = judges.start()
        (state / "judge" / "judge.yaml").write_text(ENSEMBLE.format(url=url), encoding="utf-8")
        say(f"  judge           a two-judge ensemble (aggregate: unanimous): judge_standin.py and its --variant b, "
            f"served at {url} (judge_standin.py --serve)")
        first, first_gate, _ = run_with_app(state, False, "run 1 (clean)")
        sitting(state, [first], "clean", env)
        before = agreement(state, env)
        second, _, _ = run_with_app(state, True, "run 2 (BROKEN)")
        sitting(state, [first, second], "broken", env)
        sidecar = state / "judge" / "calibration.json"
        after = agreement(state, env, "--write", str(sidecar))
        say(f"                  -> {shown(sidecar)}")
        third, third_gate, code = run_with_app(state, True, "run 3 (BROKEN)")
        say()
        say(third_gate.rstrip())
        first_line, third_line = judged_line(first_gate), judged_line(third_gate)
        if (before.get("status") == "calibrated" or after.get("status") != "calibrated"
                or "provisional" not in first_line or "provisional" in third_line
                or "below the defaults" in third_gate):
            say("\ncalibration demo: the judged line did not move from provisional to calibrated at the default floors")
            return 2
        say(f"\ncalibration demo: judged verdicts went from provisional to gating at the default floors "
            f"(gate exit {code}: {'open' if code == 0 else 'closed'}).")
        return 0
    except StepFailed as exc:
        print(f"\ncalibration demo failed: {exc}", file=sys.stderr)
        return 2
    finally:
        judges.stop()


if __name__ == "__main__":
    sys.exit(loop(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE / ".assay"))
