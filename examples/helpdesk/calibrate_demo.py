#!/usr/bin/env python3
"""`make demo CALIBRATE=1`: the judge-calibration loop on the helpdesk example, offline.

On a fresh copy of the example's state dir (under its work/ folder, so the example
itself never becomes calibrated), with the app started BROKEN so the judge has
something to fail:

    run (smoke, judged, provisional) -> cluster_failures -> label.py page
    -> a scripted labelling file (demo_labels.json: the labels a person gave, by case
       and node; the judge's verdicts are read from the page, as its export does)
    -> score_agreement.py (at the real floors: not calibrated, and what would unlock it;
       at the demo's lowered floors: calibrated, sidecar written)
    -> run again: the rubric is calibrated, its fails now count in the gate

The scripted labels stand in for a person and say so; the lowered floors are the
demo's only concession and are printed. Exit 0 when the loop showed what it should
(a provisional judged line, then a calibrated one), 2 when a step failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from demo import (App, RUNNER_FINISHED, SCRIPTS, StepFailed, last_json, run_step, say,  # noqa: E402
                  shown)

LABELS = HERE / "demo_labels.json"
DEMO_FLOORS = ["--min-pairs", "2", "--min-per-class", "1"]
# The demo calibrates a two-judge ensemble (the stand-in and its stricter variant): a node's verdict
# is theirs only when both agree, and the calibration is of the pair as configured.
ENSEMBLE = """# calibrate_demo.py: a two-judge ensemble of stand-ins (judge_standin.py), not models
judges:
  - {provider: command, command: [python3, ../judge_standin.py], model: standin-judge-1, timeout_s: 20}
  - {provider: command, command: [python3, ../judge_standin.py, --variant, b], model: standin-judge-2, timeout_s: 20}
aggregate: unanimous
max_concurrency: 4
"""
COPY_IGNORE = shutil.ignore_patterns("work", "reports", "annotations", "calibration.json", "holdout-looks*.jsonl")


def fresh_state(example_state: Path) -> Path:
    root = example_state / "work" / "calibrate-demo"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    state = root / ".assay"
    shutil.copytree(example_state, state, ignore=COPY_IGNORE)
    # the example's command judge runs relative to its state dir (../judge_standin.py)
    for extra in HERE.glob("*.py"):
        shutil.copy(extra, root / extra.name)
    (state / "judge" / "judge.yaml").write_text(ENSEMBLE, encoding="utf-8")
    return state


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
    plan = last_json(run_step("make_plan", [str(SCRIPTS / "make_plan.py"), str(converted), "--mode", "smoke",
                                            "--judge", "--state-dir", str(state), "-o", str(plan_file)], env).stdout)
    out = Path(plan["out"])
    runner = run_step("run_cases", [str(SCRIPTS / "run_cases.py"), "--plan", str(plan_file), "--out", str(out),
                                    "--progress", "never"], env, ok=set(RUNNER_FINISHED))
    gate = run_step("gate", [str(SCRIPTS / "gate.py"), str(out)], env, ok={0, 1})
    say(f"  {label:<15} {plan['run_id']}: {plan.get('cases')} cases, runner exit {runner.returncode}, "
        f"gate {'open' if gate.returncode == 0 else 'CLOSED'}")
    say(f"                  {judged_line(gate.stdout)}")
    return out, gate.stdout, gate.returncode


def page_items(page: Path) -> tuple[str, list[dict]]:
    """The batch id and items embedded in label.py's page (what its export is built from)."""
    m = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', page.read_text("utf-8"), re.S)
    if not m:
        raise StepFailed(f"step 'label' failed: {page} holds no item data")
    data = json.loads(m.group(1))
    return data["batch"], data["items"]


def scripted_labels(page: Path, annotations: Path) -> Path:
    """Write the person's labels (demo_labels.json) in the page's export format."""
    person = json.loads(LABELS.read_text(encoding="utf-8"))
    truth = {(row["case_id"], row["node_id"]): row["label"] for row in person["labels"]}
    batch, items = page_items(page)
    lines = []
    for it in items:
        label = truth.get((it["case_id"], it["node_id"]))
        if label is None:
            continue  # an item the person did not label (skipped on the page)
        lines.append({"case_id": it["case_id"], "rubric_id": it["rubric_id"], "node_id": it["node_id"],
                      "label": label, "judge_label": it["judge_label"], "reviewer": person["reviewer"],
                      "ts": person["ts"], "batch": batch})
    if not lines:
        raise StepFailed("step 'scripted labelling' failed: no page item matches demo_labels.json; the example's "
                         "judged cases changed, update demo_labels.json")
    annotations.mkdir(parents=True, exist_ok=True)
    path = annotations / f"{batch}.jsonl"
    path.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines), encoding="utf-8")
    return path


def loop(example_state: Path) -> int:
    state = fresh_state(example_state)
    say(f"assay calibration demo: a copy of the example state at {shown(state)}, app BROKEN (--break)")
    say("  judge           a two-judge ensemble (aggregate: unanimous): judge_standin.py and its --variant b")
    app = App(state / "work", broken=True, flaky=False)
    (state / "work").mkdir(exist_ok=True)
    try:
        url = app.start()
        env = dict(os.environ, HELPDESK_BASE_URL=url, HELPDESK_OTLP_FILE=str(app.otlp_file))
        env.pop("PYTHONPATH", None)

        first, first_gate, _ = one_run(state, env, "run")
        clusters = last_json(run_step("cluster_failures", [str(SCRIPTS / "cluster_failures.py"), str(first),
                                                           "--top", "3"], env).stdout)
        top = "; ".join(f"{c.get('layer')}: {c.get('reason')} x{c.get('count')}" for c in clusters.get("clusters") or [])
        say(f"  cluster_failures {clusters.get('failing_cases', '?')} failing cases; largest clusters: {top}")

        page = state / "work" / "label.html"
        lab = last_json(run_step("label", [str(SCRIPTS / "label.py"), str(first), "-o", str(page),
                                           "--reviewer", "Dana Whitfield"], env).stdout)
        say(f"  label           {shown(page)}: {lab.get('to_label')} items to label "
            f"(judge says {lab.get('by_judge_verdict')}), {lab.get('holdout_excluded')} holdout excluded")
        ann = scripted_labels(page, state / "annotations")
        say(f"  labels          {shown(ann)}: the scripted stand-in for a person (demo_labels.json)")

        real = last_json(run_step("score_agreement", [str(SCRIPTS / "score_agreement.py"), str(ann)], env).stdout)
        for pin, r in sorted((real.get("rubrics") or {}).items()):
            say(f"  score_agreement {pin} at the real floors: calibrated {r['calibrated']}; unlock: {r['unlock']}")
        sidecar = state / "judge" / "calibration.json"
        demo = last_json(run_step("score_agreement", [str(SCRIPTS / "score_agreement.py"), str(ann), "--write",
                                                      str(sidecar), *DEMO_FLOORS], env).stdout)
        for pin, r in sorted((demo.get("rubrics") or {}).items()):
            say(f"  score_agreement {pin} at the DEMO floors ({' '.join(DEMO_FLOORS)}): calibrated "
                f"{r['calibrated']}, {r['pairs']} pairs, TPR {r['tpr']}, TNR {r['tnr']}, kappa {r['kappa']} "
                f"-> {shown(sidecar)}")

        second, second_gate, code = one_run(state, env, "run again")
        say()
        say(second_gate.rstrip())
        before, after = judged_line(first_gate), judged_line(second_gate)
        if demo.get("status") != "calibrated" or "provisional" not in before or "provisional" in after:
            say("\ncalibration demo: the judged line did not move from provisional to calibrated")
            return 2
        say(f"\ncalibration demo: judged verdicts went from provisional to gating "
            f"(gate exit {code}: {'open' if code == 0 else 'closed'}).")
        return 0
    except StepFailed as exc:
        print(f"\ncalibration demo failed: {exc}", file=sys.stderr)
        return 2
    finally:
        app.stop()


if __name__ == "__main__":
    sys.exit(loop(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE / ".assay"))
