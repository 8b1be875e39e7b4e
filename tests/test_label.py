"""label.py: the labelling page's items (holdout never read, fails oversampled, canaries) and,
in a REAL headless Chromium driven by key presses, the export that score_agreement.py accepts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cdp_pipe import Browser
from fixtures_authoring import run_inproc
from helpers import ROOT, run_script
from rundir_util import make_run
from test_md_to_html import chromium_path

from assay.calibrate.label_page import page_items
from assay.calibrate.labelset import build_items, stratified
from rundir_util import cases_view

HOSTILE = "<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED2'\">"


def judge_doc(nodes: list[tuple[str, str]], pin: str = "refund-eta-v1") -> dict:
    return {"rubrics": [{"pin": pin, "rubric_id": pin.rsplit("-v", 1)[0], "version": 1, "provisional": True,
                         "verdict": "fail" if any(v == "fail" for _, v in nodes) else "pass",
                         "nodes": [{"node_id": n, "criterion": f"The answer {n.replace('-', ' ')}.", "verdict": v,
                                    "evidence": [f"quote for {n}"], "reason": f"reason for {n}", "calls": []}
                                   for n, v in nodes]}]}


def judged_run(root: Path) -> Path:
    reports = root / "state" / "reports"
    cases = [{"id": "c-1", "answer": "Refund RF-1 of 20.00 USD issued " + HOSTILE},
             {"id": "c-2", "answer": "Your refund is on its way."},
             {"id": "c-3", "answer": "I cannot tell."},
             {"id": "c-h", "holdout": True, "answer": "SEALED HOLDOUT ANSWER"},
             {"id": "c-n", "answer": "not judged"}]
    run = make_run(reports, cases, run_id="regression-20261130T101500Z-1a2b")
    for cid, nodes in {"c-1": [("states-amount", "pass"), ("gives-eta", "fail")],
                       "c-2": [("states-amount", "fail"), ("gives-eta", "unknown")],
                       "c-3": [("states-amount", "pass")], "c-h": [("states-amount", "fail")]}.items():
        (run / "cases" / cid / "judge.json").write_text(json.dumps(judge_doc(nodes)))
    vpath = cases_view(run) / "c-1" / "verdict.json"
    verdict = json.loads(vpath.read_text())
    vpath.write_text(json.dumps({**verdict, "input_text": "Please refund 20 on INV-1002", "title": "refund"}))
    (run / "cases" / "c-1" / "trajectory.json").write_text(json.dumps(
        {"tool_calls": [{"name": "issue_refund", "arguments": {"invoice_id": "INV-1002"},
                         "result": {"refund_id": "RF-1", "amount": 20.0}, "error": None}]}))
    return run


def test_items_exclude_holdout_and_oversample_fails(tmp_path):
    run = judged_run(tmp_path)
    out = build_items(run, annotation_files=[])
    assert {i["case_id"] for i in out["items"]} == {"c-1", "c-2", "c-3"}
    assert out["stats"]["holdout_excluded"] == 1 and out["stats"]["judged_cases"] == 3
    mat = {key.split("@")[0]: m for key, m in out["materials"].items()}
    assert "c-h" not in mat and "SEALED" not in json.dumps(out)
    assert mat["c-1"]["tools"][0]["name"] == "issue_refund"
    assert mat["c-1"]["input"] == "Please refund 20 on INV-1002"
    assert '"message": "hi"' in mat["c-2"]["input"]       # no input_text: the request body
    items = [{"judge_label": v, "id": i} for i, v in enumerate(["pass"] * 8 + ["fail"] * 2 + ["unknown"])]
    order = [i["judge_label"] for i in stratified(items, 0)]
    assert order[:4] == ["fail", "pass", "fail", "unknown"] and order.count("fail") == 2


def test_the_order_asked_does_not_tell_the_judges_verdict(tmp_path):
    """The queue was dealt fail, pass, fail, unknown, pass: item 1 was always one of the judge's fails
    and a person who saw the pattern knew the judge's verdict from an item's place. Now the judge's
    verdicts flipped leave the order as it was (a --limit still keeps fails first: which, not where)."""
    run = judged_run(tmp_path)

    def order():
        return [(i["case_id"], i["node_id"]) for i in build_items(run, annotation_files=[], seed=3)["items"]]
    before = order()
    flip = {"pass": "fail", "fail": "pass", "unknown": "unknown"}
    for path in (run / "cases").glob("*/judge.json"):
        doc = json.loads(path.read_text())
        for rubric in doc["rubrics"]:
            for node in rubric["nodes"]:
                node["verdict"] = flip[node["verdict"]]
        path.write_text(json.dumps(doc))
    assert order() == before
    kept = build_items(run, annotation_files=[], seed=3, limit=2)["stats"]["by_judge_verdict"]
    assert kept == {"fail": 1, "pass": 1, "unknown": 0}


def test_canaries_come_from_earlier_labels(tmp_path):
    run = judged_run(tmp_path)
    ann = tmp_path / "state" / "annotations"
    ann.mkdir()
    (ann / "old.jsonl").write_text(_line("c-3", "pass", _sha((run / "cases" / "c-3" / "answer.txt").read_text())))
    out = build_items(run)           # default: <state>/annotations/*.jsonl
    canaries = [i for i in out["items"] if i.get("canary")]
    assert [(c["case_id"], c["expected"]) for c in canaries] == [("c-3", "pass")]
    assert out["stats"]["to_label"] == 4 and out["stats"]["already_labelled"] == 1
    assert out["items"][0].get("canary") is not True


def test_label_script_bad_input(tmp_path):
    run = judged_run(tmp_path)
    r = run_inproc("label", run, "-o", tmp_path / "page.txt")
    assert r.rc == 2 and ".html" in r.json["error"]
    r = run_inproc("label", tmp_path / "nope", "-o", tmp_path / "p.html")
    assert r.rc == 2 and "not a directory" in r.json["error"]
    r = run_inproc("label", run, "-o", tmp_path / "missing" / "p.html")
    assert r.rc == 2 and "does not exist" in r.json["error"]
    (run / "cases" / "c-2" / "judge.json").write_text(json.dumps({"rubrics": [{"pin": "refund-eta"}]}))
    r = run_inproc("label", run, "-o", tmp_path / "p.html")
    assert r.rc == 2 and "c-2/judge.json" in r.json["error"] and "not a rubric pin" in r.json["error"]
    bare = make_run(tmp_path / "other" / "reports", [{"id": "c-9"}])
    r = run_inproc("label", bare, "-o", tmp_path / "p.html")
    assert r.rc == 2 and "no judged non-holdout case" in r.json["error"]


def test_a_run_id_that_is_a_path_writes_nothing_outside_the_state(tmp_path):
    """A run dir someone else made (a colleague's, a download) whose results.json names its run
    `x/../../<elsewhere>`: label.py named the batch after it and wrote the batch's judge record,
    `<state>/annotations/.<batch>.judge.json`, wherever that path led. It refuses, naming the file and
    the key, and writes nothing."""
    run = judged_run(tmp_path)
    manifest = json.loads((run / "manifest.yaml").read_text())
    (run / "manifest.yaml").write_text(json.dumps({**manifest, "judge": {"provider": "anthropic", "model": "m",
                                                                         "prompt_version": 1}}))
    elsewhere = tmp_path / "elsewhere"
    results = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps(
        {**results, "run_id": "x/" + "../" * 40 + str(elsewhere / "planted").lstrip("/")}))
    r = run_script("label", run, "-o", tmp_path / "page.html")
    assert r.rc == 2, r.stdout + r.stderr
    assert "results.json" in r.json["error"] and "run_id" in r.json["error"] and r.json["key"] == "run_id"
    assert not elsewhere.exists(), sorted(map(str, elsewhere.rglob("*")))
    assert not (tmp_path / "page.html").exists() and not (tmp_path / "state" / "annotations").exists()


def test_a_batch_that_is_a_path_is_no_record_path(tmp_path):
    """score_agreement.py --write reads the record of each annotation line's `batch` (anyone's text):
    a batch with a `/` names no record (the batch is then unchecked), never a file elsewhere."""
    from assay.calibrate.labelled_judge import record_path
    assert record_path(tmp_path, "regression-20261130T101500Z-20261201T000000Z-ab12").parent == tmp_path / "annotations"
    for batch in ("x/../../../etc/planted", "a\\b", "a\0b"):
        with pytest.raises(ValueError):
            record_path(tmp_path, batch)


def test_page_in_real_chromium_label_three_by_keys_export_and_score(tmp_path):
    chromium = chromium_path()
    run = judged_run(tmp_path)
    page = tmp_path / "label.html"
    r = run_script("label", run, "-o", page, "--reviewer", "Dana Whitfield", "--seed", "3")
    assert r.rc == 0, r.stdout
    assert r.json["to_label"] == 5 and r.json["holdout_excluded"] == 1
    html = page.read_text()
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html)   # nothing external
    assert "http://" not in html and "https://" not in html and "@import" not in html and "url(" not in html
    assert "SEALED" not in html

    browser = Browser(chromium, tmp_path / "profile")
    try:
        browser.open(page.as_uri())
        browser.wait_for("document.body && document.body.getAttribute('data-ready') === '1'")
        pressed = []
        for n in range(3):
            case = browser.eval("document.getElementById('case').textContent").split(" ")[0]
            if n == 0:
                browser.key("c")
                browser.type_text("evidence quote is not about the ETA")
                browser.key("Escape")
            key = "pf"[n % 2]          # labelled blind: the judge's verdict is not on the page yet
            browser.key(key)
            pressed.append((case, key))
        browser.key("e")
        exported = browser.eval("document.getElementById('export').value")
        title = browser.eval("document.title")
        for _ in range(3):
            browser.key("k")
        shown = {}
        for _ in range(5):   # walk every item: each case's input and answer, as text
            shown[browser.eval("document.getElementById('case').textContent").split(" ")[0]] = (
                browser.eval("document.getElementById('input').textContent"),
                browser.eval("document.getElementById('answer').textContent"))
            browser.key("j")
    finally:
        browser.close()

    assert "PWNED" not in title
    assert shown["c-1"][0] == "Please refund 20 on INV-1002" and "<script>document.title" in shown["c-1"][1]
    assert set(shown) == {"c-1", "c-2", "c-3"}
    lines = [json.loads(x) for x in exported.splitlines()]
    assert len(lines) == 3
    judged = {(it["case_id"], it["node_id"]): it["judge_label"] for it in page_items(html)[1]}
    for line, (case, key) in zip(lines, pressed):
        assert line["case_id"] == case and line["reviewer"] == "Dana Whitfield"
        assert line["judge_label"] == judged[(case, line["node_id"])]     # the export unseals the judge's verdict
        assert line["rubric_id"] == "refund-eta-v1" and line["batch"] == r.json["batch"]
        assert line["label"] == {"p": "pass", "f": "fail"}[key]
    assert lines[0]["critique"] == "evidence quote is not about the ETA"
    ann = tmp_path / "state" / "annotations"
    ann.mkdir()
    (ann / "batch.jsonl").write_text(exported)
    s = run_script("score_agreement", ann / "batch.jsonl", "--min-pairs", "1", "--min-per-class", "0")
    assert s.rc == 0, s.stdout
    rub = s.json["rubrics"]["refund-eta-v1"]
    assert rub["pairs"] + rub["unknown"] == 3


# ---------------------------------------------------------------- issue 24 D4: labelled on which answer?
def _sha(text: str) -> str:
    import hashlib
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _line(case_id, label, answer_sha=None, node="states-amount"):
    row = {"case_id": case_id, "rubric_id": "refund-eta-v1", "node_id": node, "label": label,
           "judge_label": "pass", "reviewer": "dana", "ts": "x"}
    if answer_sha is not None:
        row["answer_sha256"] = answer_sha
    return json.dumps(row) + "\n"


def test_an_item_whose_answer_changed_is_relabelled_never_a_canary(tmp_path):
    run = judged_run(tmp_path)
    ann = tmp_path / "state" / "annotations"
    ann.mkdir()
    current = (cases_view(run) / "c-3" / "answer.txt").read_text(encoding="utf-8")
    (ann / "old.jsonl").write_text(_line("c-3", "fail", _sha("an older answer that said nothing")))
    out = build_items(run, canaries=3)
    c3 = [i for i in out["items"] if i["case_id"] == "c-3"]
    assert len(c3) == 1 and not c3[0].get("canary")          # asked again, as a fresh item
    assert c3[0]["answer_sha256"] == _sha(current)
    assert out["stats"]["answer_changed"] == 1 and out["stats"]["canaries"] == 0


def test_a_canary_is_only_an_item_labelled_on_the_same_answer(tmp_path):
    run = judged_run(tmp_path)
    ann = tmp_path / "state" / "annotations"
    ann.mkdir()
    same = _sha((cases_view(run) / "c-3" / "answer.txt").read_text(encoding="utf-8"))
    c1 = _sha((cases_view(run) / "c-1" / "answer.txt").read_text(encoding="utf-8"))
    (ann / "old.jsonl").write_text(_line("c-3", "pass", same) + _line("c-1", "pass", _sha("older")) +
                                   _line("c-2", "fail", None))  # no hash: labelled on unknown material
    out = build_items(run, canaries=3)
    canaries = [(i["case_id"], i["expected"]) for i in out["items"] if i.get("canary")]
    assert canaries == [("c-3", "pass")]
    stats = out["stats"]
    assert stats["answer_changed"] == 1 and stats["labelled_on_unknown_answer"] == 1
    # the unknown-material label is neither a canary nor asked again
    assert not [i for i in out["items"] if i["case_id"] == "c-2" and i["node_id"] == "states-amount"]


def test_an_item_labelled_before_the_rest_of_its_answer_was_shown_is_asked_again(tmp_path):
    """The page exports saw_whole_answer false for a label given on the first screen of a long answer;
    score_agreement does not count it, so the next page asks the item again (never as a canary), and the
    page holds the whole answer (it was cut at 20,000 characters, '… (N more characters)')."""
    run = judged_run(tmp_path)
    long = "ok " * 10_000 + "FAILURE AT THE END"
    (run / "cases" / "c-3" / "answer.txt").write_text(long, encoding="utf-8")
    ann = tmp_path / "state" / "annotations"
    ann.mkdir()
    (ann / "old.jsonl").write_text(json.dumps(dict(json.loads(_line("c-3", "pass", _sha(long))),
                                                   saw_whole_answer=False)) + "\n")
    out = build_items(run, canaries=3)
    c3 = [i for i in out["items"] if i["case_id"] == "c-3"]
    assert len(c3) == 1 and not c3[0].get("canary") and out["stats"]["canaries"] == 0
    assert out["stats"]["labelled_without_whole_answer"] == 1 and out["stats"]["already_labelled"] == 0
    assert out["materials"][c3[0]["material"]]["answer"] == long
    # two reviewers who disagree on c-1's answer: no one label to expect, so never a canary, nor asked again
    c1 = _sha((run / "cases" / "c-1" / "answer.txt").read_text())
    (ann / "two.jsonl").write_text(_line("c-1", "pass", c1) + json.dumps(dict(json.loads(_line("c-1", "fail", c1)),
                                                                              reviewer="lee")) + "\n")
    out = build_items(run, canaries=3)
    assert not [i for i in out["items"] if (i["case_id"], i["node_id"]) == ("c-1", "states-amount")]
    assert out["stats"]["people_disagree"] == 1 and out["stats"]["canaries"] == 0


# ---------------------------------------------------------------- issue 30 item 6: several runs, one page
def _second_run(tmp_path: Path, first: Path) -> Path:
    """The same cases again: c-1 answers differently, c-2 and c-3 say what they said."""
    import shutil
    second = first.parent / "regression-20261130T111500Z-3c4d"
    shutil.copytree(first, second)
    results = json.loads((second / "results.json").read_text())
    (second / "results.json").write_text(json.dumps(dict(results, run_id=second.name)))
    (second / "cases" / "c-1" / "answer.txt").write_text("Refund RF-1 of 20.00 USD, back within 5 days.")
    return second


def test_several_runs_one_page_each_distinct_answer_once(tmp_path):
    first = judged_run(tmp_path)
    second = _second_run(tmp_path, first)
    out = build_items([first, second], annotation_files=[])
    by_case: dict = {}
    for i in out["items"]:
        by_case.setdefault(i["case_id"], set()).add(i["answer_sha256"])
    assert {c: len(v) for c, v in by_case.items()} == {"c-1": 2, "c-2": 1, "c-3": 1}
    assert out["stats"]["runs"] == 2 and out["stats"]["same_answer_in_another_run"] == 2
    assert out["stats"]["to_label"] == 7                       # 2 + 2 nodes of c-1, 2 of c-2, 1 of c-3
    c1 = [i for i in out["items"] if i["case_id"] == "c-1"]
    assert len({i["material"] for i in c1}) == 2 and all(i["material"] in out["materials"] for i in c1)
    assert {out["materials"][i["material"]]["answer_sha256"] for i in c1} == {i["answer_sha256"] for i in c1}


def test_labels_of_one_case_on_two_answers_are_two_pairs_and_older_files_still_read(tmp_path):
    first = judged_run(tmp_path)
    second = _second_run(tmp_path, first)
    shas = [_sha((run / "cases" / "c-1" / "answer.txt").read_text()) for run in (first, second)]
    ann = tmp_path / "a.jsonl"
    ann.write_text(_line("c-1", "pass", shas[0]) + _line("c-1", "pass", shas[1])
                   + _line("c-1", "fail", shas[1])               # same answer again: last wins, one pair
                   + _line("c-1", "pass", None)                  # older line on unknown material: yields
                   + _line("c-3", "pass", None))                 # older line alone: counted as before
    r = run_inproc("score_agreement", ann, "--min-pairs", "1", "--min-per-class", "0")
    assert r.rc == 0, r.json
    rub = r.json["rubrics"]["refund-eta-v1"]
    assert rub["pairs"] == 3 and rub["tn"] == 2 and rub["fn"] == 1
    assert r.json["duplicates_replaced"] == 1 and r.json["unknown_material_dropped"] == 1
    assert r.json["distinct_answers"] == 2
    page = run_inproc("label", first, second, "-o", tmp_path / "p.html", "--annotations", ann)
    assert page.rc == 0, page.json
    assert page.json["run_ids"] == [first.name, second.name] and page.json["already_labelled"] == 2


# ---------------------------------------------------------------- pairwise and conversation-turn rubrics
def _pairwise_and_turn_runs(root: Path) -> Path:
    """A baseline run and a run whose c-p has a pairwise verdict against it and whose c-t (a conversation)
    has a rubric judged on turn 2; answers hostile. Plus c-x: pairwise against a baseline answer that
    changed since (its sha differs): not shown."""
    reports = root / "state" / "reports"
    make_run(reports, [{"id": "c-p", "answer": "Baseline: refund soon " + HOSTILE},
                       {"id": "c-x", "answer": "edited since"}], run_id="regression-20261129T101500Z")
    run = make_run(reports, [{"id": "c-p", "answer": "Refund in 5 business days."},
                             {"id": "c-t", "answer": "Refunded INV-2."}, {"id": "c-x", "answer": "x"}],
                   run_id="regression-20261130T101500Z")
    pairwise = judge_doc([("clearer-eta", "fail")], pin="eta-vs-baseline-v1")
    pairwise["rubrics"][0].update(kind="pairwise", baseline_run_id="regression-20261129T101500Z",
                                  baseline_answer_sha256=_sha("Baseline: refund soon " + HOSTILE))
    (run / "cases" / "c-p" / "judge.json").write_text(json.dumps(pairwise))
    stale = json.loads(json.dumps(pairwise))
    stale["rubrics"][0]["baseline_answer_sha256"] = _sha("what it said then")
    (run / "cases" / "c-x" / "judge.json").write_text(json.dumps(stale))
    turn = judge_doc([("gives-eta", "pass")])
    turn["rubrics"][0].update(turn=2, scope="turn")
    (run / "cases" / "c-t" / "judge.json").write_text(json.dumps(turn))
    for n, (user, answer) in enumerate([("which invoice is open?", "INV-2 is open " + HOSTILE),
                                        ("refund that one", "Refunded INV-2.")], 1):
        tdir = run / "cases" / "c-t" / "turns" / str(n)
        tdir.mkdir(parents=True)
        (tdir / "answer.txt").write_text(answer)
        (tdir / "request.json").write_text(json.dumps({"body": {"message": user}}))
    vpath = run / "cases" / "c-t" / "verdict.json"
    vpath.write_text(json.dumps({**json.loads(vpath.read_text()),
                                 "input_text": "[turn 1] which invoice is open?\n[turn 2] refund that one"}))
    return run


def test_page_shows_pairwise_and_turn_rubrics_as_text_in_real_chromium(tmp_path):
    chromium = chromium_path()
    run = _pairwise_and_turn_runs(tmp_path)
    page = tmp_path / "label.html"
    r = run_script("label", run, "-o", page, "--reviewer", "Dana Whitfield")
    assert r.rc == 0, r.stdout
    assert (r.json["to_label"], r.json["material_missing"]) == (2, 1)   # c-x: the baseline's answer changed
    browser = Browser(chromium, tmp_path / "profile")
    seen = {}
    try:
        browser.open(page.as_uri())
        browser.wait_for("document.body && document.body.getAttribute('data-ready') === '1'")
        for _ in range(2):
            case = browser.eval("document.getElementById('case').textContent").split(" ")[0]
            seen[case] = {k: browser.eval(f"document.getElementById('{k}').textContent")
                          for k in ("answer", "baseline", "baseline-run", "earlier", "scope")}
            seen[case].update({f"{k}-hidden": browser.eval(f"document.getElementById('{k}-box').hidden")
                               for k in ("baseline", "earlier", "scope")})
            browser.key("f" if case == "c-p" else "p")
        browser.key("e")
        exported = browser.eval("document.getElementById('export').value")
        title = browser.eval("document.title")
    finally:
        browser.close()
    assert "PWNED" not in title
    p, t = seen["c-p"], seen["c-t"]
    assert p["baseline"] == "Baseline: refund soon " + HOSTILE and p["baseline-run"] == "regression-20261129T101500Z"
    assert p["answer"] == "Refund in 5 business days."
    assert (p["baseline-hidden"], p["earlier-hidden"], p["scope-hidden"]) == (False, True, True)
    assert (t["baseline-hidden"], t["earlier-hidden"], t["scope-hidden"]) == (True, False, False)
    assert t["answer"] == "Refunded INV-2." and t["scope"] == "turn 2 of the conversation"
    assert t["earlier"] == "[turn 1] user: which invoice is open?\n[turn 1] answer: INV-2 is open " + HOSTILE
    lines = {json.loads(x)["case_id"]: json.loads(x) for x in exported.splitlines()}
    assert lines["c-t"]["answer_sha256"] == _sha("Refunded INV-2.") and lines["c-p"]["label"] == "fail"


def test_write_refuses_labels_of_another_judge_than_the_one_configured(tmp_path):
    """label.py keeps which judge judged the runs it shows (<state>/annotations/.<batch>.judge.json, from
    each run's manifest) and on which criteria; score_agreement.py --write refuses when judge.yaml now
    configures another judge, or a labelled node's criterion was reworded without a version bump: a
    sidecar written after either said the judge agreed with people on evidence about another judge or
    text, and its rubric gated (the judge trial). A batch labelled without the record is not
    checked, and --write says which."""
    import shutil
    from assay.judge.config import effective, load_judge_config, manifest_view
    from assay.judge.prompt import PROMPT_VERSION
    state = tmp_path / "state"
    shutil.copytree(ROOT / "examples" / "helpdesk" / ".assay", state,
                    ignore=shutil.ignore_patterns("reports", "work", "annotations", "cache", "calibration.json"))
    # the stand-in judge the example's judge.yaml runs (../judge_standin.py from the state dir): --write binds
    # its code and refuses a judge script that is not there
    shutil.copy(ROOT / "examples" / "helpdesk" / "judge_standin.py", tmp_path / "judge_standin.py")
    run = judged_run(tmp_path)
    for cid in ("c-1", "c-2", "c-3"):   # the labelled run's cases are the suite's (labels on others do not count)
        (state / "datasets" / f"{cid}.yaml").write_text(f"id: {cid}\n", encoding="utf-8")
    criteria = {"states-amount": "The reply states the refunded amount, with its currency.",
                "gives-eta": "The reply says when the refund will arrive (a date, or a number of business days)."}
    for cid in ("c-1", "c-2", "c-3"):   # judged on the helpdesk rubric's own words (its node ids)
        path = run / "cases" / cid / "judge.json"
        doc = json.loads(path.read_text())
        for node in doc["rubrics"][0]["nodes"]:
            node["node_id"] = "states-arrival" if node["node_id"] == "gives-eta" else node["node_id"]
            node["criterion"] = criteria["gives-eta" if node["node_id"] == "states-arrival" else "states-amount"]
        path.write_text(json.dumps(doc))
    manifest = json.loads((run / "manifest.yaml").read_text())
    manifest["judge"] = dict(manifest_view(effective(load_judge_config(state))), enabled=True,
                             prompt_version=PROMPT_VERSION)   # what the runner records (judge.runtime.manifest)
    (run / "manifest.yaml").write_text(json.dumps(manifest))
    r = run_script("label", run, "-o", tmp_path / "label.html", "--reviewer", "Dana")
    assert r.rc == 0, r.stdout
    batch = r.json["batch"]
    assert (state / "annotations" / f".{batch}.judge.json").is_file()
    lines = "".join(json.dumps({"case_id": c, "rubric_id": "refund-eta-v1", "node_id": "states-amount", "label": lab,
                                "judge_label": lab, "reviewer": "Dana", "ts": "t", "batch": batch}) + "\n"
                    for c, lab in (("c-1", "pass"), ("c-2", "fail"), ("c-3", "pass")))
    (state / "annotations" / f"{batch}.jsonl").write_text(lines)
    args = (state / "annotations", "--write", state / "judge" / "calibration.json", "--min-pairs", "1",
            "--min-per-class", "0")
    same = run_script("score_agreement", *args)
    assert same.rc == 0 and same.json["labelled_judge_unchecked"] == [], same.stdout
    # a line of the batch on a case its page never showed, or with another judge verdict than the page
    # showed: before, --write counted it as that sitting's label (a pair on nothing, or on a verdict the
    # judge never gave); now refused, naming file:line and the case
    written = (state / "judge" / "calibration.json").read_text()
    page_lines = (state / "annotations" / f"{batch}.jsonl").read_text()
    for extra, words in (({"case_id": "c-9", "label": "fail", "judge_label": "fail"}, "its labelling page never showed"),
                         ({"case_id": "c-2", "label": "fail", "judge_label": "pass"},
                          "says the judge said 'pass' on case c-2 (refund-eta-v1 node states-amount), and its "
                          "labelling page showed 'fail'")):
        line = {"rubric_id": "refund-eta-v1", "node_id": "states-amount", "reviewer": "Dana", "ts": "t",
                "batch": batch, **extra}
        (state / "annotations" / f"{batch}.jsonl").write_text(page_lines + json.dumps(line) + "\n")
        bad = run_script("score_agreement", *args)
        assert bad.rc == 2 and words in bad.json["error"], bad.stdout
        assert f"{batch}.jsonl:4" in bad.json["error"] and bad.json["case_id"] == extra["case_id"]
        assert (state / "judge" / "calibration.json").read_text() == written   # nothing written
    (state / "annotations" / f"{batch}.jsonl").write_text(page_lines)
    # the rubric's criterion reworded after the labels, its version kept: the labels are about the old text
    rubric = state / "rubrics" / "refund-eta.md"
    worded = rubric.read_text()
    rubric.write_text(worded.replace("with its currency.", "in any currency or none."))
    edited = run_script("score_agreement", *args)
    assert edited.rc == 2 and "refund-eta-v1 node states-amount judged on the criterion" in edited.json["error"], \
        edited.stdout
    rubric.write_text(worded)
    judge_yaml = state / "judge" / "judge.yaml"
    judge_yaml.write_text(judge_yaml.read_text().replace("model: standin-judge-1", "model: standin-judge-2"))
    other = run_script("score_agreement", *args)
    assert other.rc == 2 and f"batch {batch} labelled verdicts of run {run.name}'s judge" in other.json["error"]
    assert "model 'standin-judge-1'" in other.json["error"] and "model 'standin-judge-2'" in other.json["error"]
    (state / "annotations" / f".{batch}.judge.json").unlink()   # labelled before label.py kept its judge
    old = run_script("score_agreement", *args)
    assert old.rc == 0 and old.json["labelled_judge_unchecked"] == [batch], old.stdout
