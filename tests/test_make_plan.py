"""make_plan.py: modes, selection flags, --layer, execution flags, manifest_extra, git, refusals."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys

import pytest

from fixtures_authoring import convert, make_state, run_inproc
from helpers import ROOT, SCRIPTS, run_script

from assay.core.version import HARNESS_VERSION
from assay.plan.modes import MODES
from assay.plan.validate import validate_plan


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """One converted state dir (in a git repo) shared by the read-only checks."""
    root = tmp_path_factory.mktemp("app")
    state = make_state(root, git=True)
    work = convert(state)
    return state, work / "converted.json"


def plan_of(state, conv, *args):
    r = run_inproc("make_plan", conv, "--state-dir", state, *args)
    assert r.rc == 0, (r.stdout, r.stderr)
    plan = json.loads(r.stdout)
    validate_plan(plan)
    return plan, r


def refused(state, conv, *args):
    r = run_inproc("make_plan", conv, "--state-dir", state, *args)
    assert r.rc == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    return r.json["error"]


def ids(plan):
    return [c["id"] for c in plan["cases"]]


# ---- the modes, end to end as a subprocess ------------------------------------------------------

@pytest.mark.parametrize("mode", ["smoke", "regression", "holdout"])
def test_mode_table_as_subprocess(suite, tmp_path, mode):
    state, conv = suite
    out = tmp_path / "plan.json"
    r = run_script("make_plan", conv, "--mode", mode, "--state-dir", state, "-o", out)
    assert r.rc == 0, r.stdout
    plan = json.loads(out.read_text())
    validate_plan(plan, source=str(out))
    m = MODES[mode]
    assert (plan["mode"], plan["k"], plan["gate"], plan["selecting_split"]) == (mode, m.k, m.gate, m.split)
    assert plan["cases"] and all(m.split in c["split"] for c in plan["cases"])
    s = r.json
    assert set(s) == {"plan", "run_id", "mode", "selecting_split", "k", "gate", "cases", "out", "notes", "run",
                      "validation", "counts", "app_calls", "warnings"}
    from assay.core.casekind import app_calls
    assert s["app_calls"] == sum(app_calls(c) for c in plan["cases"]) * plan["k"]
    n_canaries = sum(1 for c in plan["cases"] if "canary" in c["split"])
    from assay.stats.counts import cases_phrase
    assert s["counts"] == cases_phrase(len(plan["cases"]) - n_canaries, n_canaries)
    assert s["validation"]["errors"] == 0 and s["validation"]["allow_invalid"] is False
    assert plan["manifest_extra"]["validation"] == s["validation"]
    assert s["plan"] == str(out.resolve()) and s["cases"] == len(plan["cases"])
    assert s["run_id"] == plan["run_id"] and s["run_id"].startswith(f"{mode}-")
    assert s["out"] == str(state.resolve() / "reports" / plan["run_id"])
    assert shlex.split(s["run"]) == ["python3", str(SCRIPTS / "run_cases.py"), "--plan", str(out.resolve()),
                                     "--out", s["out"]]
    assert plan["paths"]["state_dir"] == str(state.resolve())
    assert plan["paths"]["scripts_dir"] == str(SCRIPTS)
    assert plan["paths"]["holdout_ledger"] == ("datasets/holdout-looks.jsonl" if mode == "holdout" else None)
    assert plan["adapter"]["invocation"]["base_url"] == "${HELPDESK_BASE_URL}"
    assert plan["scoring"] == {"oos_route": "none", "id_pattern": "INV-[0-9]{4}"}
    extra = plan["manifest_extra"]
    assert extra["dataset_version"] == 3 and extra["judge"] == {"model": None, "status": "uncalibrated"}
    assert extra["app"]["git_tree"] == "clean" and len(extra["app"]["git_sha"]) == 40
    assert "execution" not in plan


def test_plan_on_stdout_without_o(suite):
    state, conv = suite
    r = run_script("make_plan", conv, "--mode", "smoke", "--state-dir", state)
    assert r.rc == 0
    validate_plan(r.json)
    assert r.json["mode"] == "smoke"


def test_default_mode_is_regression(suite):
    plan, _ = plan_of(*suite)
    assert plan["mode"] == "regression" and plan["k"] == 3 and plan["gate"] == "hard"


def test_mode_full_and_unknown_are_refused(suite):
    msg = refused(*suite, "--mode", "full")
    assert "regression" in msg and "holdout" in msg
    assert "unknown --mode" in refused(*suite, "--mode", "nightly")


# ---- k ----------------------------------------------------------------------------------------

def test_k_override_and_refusals(suite):
    plan, r = plan_of(*suite, "--k", "5")
    assert plan["k"] == 5
    plan, _ = plan_of(*suite, "--mode", "holdout", "--k", "2")
    assert plan["k"] == 2
    assert "--k is refused under --mode smoke" in refused(*suite, "--mode", "smoke", "--k", "1")
    assert "between 1 and" in refused(*suite, "--k", "0")
    assert "between 1 and" in refused(*suite, "--k", "101")


def test_regression_with_small_k_is_noted(suite, tmp_path):
    state, conv = suite
    r = run_inproc("make_plan", conv, "--state-dir", state, "--k", "1", "-o", tmp_path / "p.json")
    assert any("k=1" in n for n in r.json["notes"])


def test_a_smoke_plan_of_a_suite_without_canaries_notes_it(suite, tmp_path):
    """The start skill generates 2 canaries; a suite with none planned its smoke run without a word (a
    broken token then reads as every case failing, not a canary's stop that names it): a note now."""
    from fixtures_authoring import CASES
    cases = {cid: text.replace("split: [smoke, canary]", "split: [smoke, full]") for cid, text in CASES.items()}
    state = make_state(tmp_path, cases=cases, dataset=None)
    r = run_inproc("make_plan", convert(state) / "converted.json", "--state-dir", state, "--mode", "smoke",
                   "-o", tmp_path / "p.json")
    assert r.rc == 0, r.stdout + r.stderr
    said = [n for n in r.json["notes"] if n.startswith("no canary in this suite")]
    assert said == [r.json["notes"][-1]] and "split: [smoke, canary]" in said[0], r.json["notes"]
    assert not [w for w in r.json["warnings"] if "canary" in w]   # a note, not a warning: nothing is mismeasured
    state, conv = suite   # the shared suite has 2 canaries: no note
    r = run_inproc("make_plan", conv, "--state-dir", state, "--mode", "smoke", "-o", tmp_path / "q.json")
    assert r.rc == 0 and not [n for n in r.json["notes"] if "no canary" in n], r.json["notes"]


# ---- targeted: --tag, --split, --failing-in ---------------------------------------------------

def test_targeted_tag_matches_unit_or_route_never_id(suite):
    plan, _ = plan_of(*suite, "--mode", "targeted", "--tag", "shifts")
    assert ids(plan) == ["c-00000004", "c-00000005"]  # c-00000009 is smoke/canary only, not full
    assert plan["k"] == 1 and plan["gate"] == "soft" and plan["selecting_split"] == "full"
    plan, _ = plan_of(*suite, "--mode", "targeted", "--tag", "none")  # expect.route of the oos case
    assert ids(plan) == ["c-00000006"]
    msg = refused(*suite, "--mode", "targeted", "--tag", "c-00000001")
    assert "no case selected" in msg and "full: 7" in msg and "holdout: 1" in msg


def test_targeted_split_smoke(suite):
    plan, _ = plan_of(*suite, "--mode", "targeted", "--tag", "shifts", "--split", "smoke")
    assert plan["selecting_split"] == "smoke" and ids(plan) == ["c-00000004", "c-00000005", "c-00000009"]
    assert "full or smoke" in refused(*suite, "--mode", "targeted", "--tag", "shifts", "--split", "holdout")


@pytest.mark.parametrize("flag", [("--tag", "x"), ("--split", "smoke"), ("--failing-in", "."), ("--case", "c-1")])
def test_targeted_only_flags_refused_elsewhere(suite, flag):
    assert "only valid with --mode targeted" in refused(*suite, "--mode", "regression", *flag)


def test_targeted_needs_a_tag(suite):
    assert "needs --tag" in refused(*suite, "--mode", "targeted")


def test_targeted_case_keeps_exactly_those_ids(suite):
    plan, _ = plan_of(*suite, "--mode", "targeted", "--case", "c-00000005", "--case", "c-00000001")
    assert ids(plan) == ["c-00000001", "c-00000005"]  # in suite order, each once
    plan, _ = plan_of(*suite, "--mode", "targeted", "--tag", "shifts", "--split", "smoke", "--case", "c-00000009")
    assert ids(plan) == ["c-00000009"]
    # an id the split/tag does not hold is named, never silently dropped
    error = refused(*suite, "--mode", "targeted", "--tag", "shifts", "--case", "c-00000001", "--case", "c-nope")
    assert "--case c-00000001, c-nope: not among the cases" in error and "--tag 'shifts'" in error
    # one typo'd id: the nearest id the mode selects is suggested, never a holdout one (sealed)
    error = refused(*suite, "--mode", "targeted", "--tag", "shifts", "--case", "c-0000004")
    assert "not among the cases --mode targeted (split 'full') --tag 'shifts' selects; did you mean 'c-00000004'?" \
        in error, error
    error = refused(*suite, "--mode", "targeted", "--case", "c-000000010")
    assert "c-00000010" not in error and "did you mean 'c-00000010'" not in error, error


def make_run(dirpath, *, dataset_version=3, harness=HARNESS_VERSION, verdicts=()):
    dirpath.mkdir(parents=True)
    (dirpath / "manifest.yaml").write_text(json.dumps({"dataset_version": dataset_version, "harness_version": harness}))
    (dirpath / "verdicts.jsonl").write_text("".join(json.dumps({"case_id": c, "verdict": v}) + "\n" for c, v in verdicts))
    return dirpath


def test_failing_in_comparable_run_keeps_failed_tagged_cases(suite, tmp_path):
    run = make_run(tmp_path / "regression-20261101T000000Z",
                   verdicts=[("c-00000004", "fail"), ("c-00000005", "pass"), ("c-00000001", "fail")])
    plan, r = plan_of(*suite, "--mode", "targeted", "--tag", "shifts", "--failing-in", run)
    assert ids(plan) == ["c-00000004"]


def test_failing_in_fallbacks_keep_every_tagged_case_with_a_note(suite, tmp_path):
    state, conv = suite
    cases = [
        (make_run(tmp_path / "a", dataset_version=2, verdicts=[("c-00000004", "fail")]), "not comparable"),
        (make_run(tmp_path / "b", harness="0.0.1", verdicts=[("c-00000004", "fail")]), "not comparable"),
        (make_run(tmp_path / "c", verdicts=[("c-00000004", "pass")]), "no tagged case failed"),
    ]
    for run, needle in cases:
        r = run_inproc("make_plan", conv, "--state-dir", state, "--mode", "targeted", "--tag", "shifts",
                       "--failing-in", run, "-o", tmp_path / "p.json")
        assert r.rc == 0, r.stdout
        assert r.json["cases"] == 2
        assert any(needle in n for n in r.json["notes"]), r.json["notes"]
        assert needle not in r.stderr  # the fallback note goes to the summary only


def test_failing_in_refusals(suite, tmp_path):
    assert "no such run directory" in refused(*suite, "--mode", "targeted", "--tag", "shifts",
                                              "--failing-in", tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    assert "not a run directory" in refused(*suite, "--mode", "targeted", "--tag", "shifts",
                                            "--failing-in", tmp_path / "empty")


# ---- --layer ----------------------------------------------------------------------------------

@pytest.mark.parametrize("layer, key", [("answer", "answer_quality"), ("rules", "answer_quality"),
                                        ("judged", "answer_quality"), ("routing", "routing"),
                                        ("answer_quality", "answer_quality")])
def test_layer_isolates_one_matrix_key(suite, layer, key):
    plan, _ = plan_of(*suite, "--layer", layer)
    matrix = plan["capability_matrix"]
    assert matrix[key]["enabled"] is True
    for other, entry in matrix.items():
        if other != key:
            assert entry["enabled"] is False and entry["blocked_by"] == f"--layer {layer}", other


@pytest.mark.parametrize("layer, needle", [("http", "no capability-matrix key"), ("loops", "no capability-matrix key"),
                                           ("vibes", "is not a layer"), ("trajectory", "disabled in profile.yaml")])
def test_layer_refusals(suite, layer, needle):
    assert needle in refused(*suite, "--layer", layer)


def test_layer_notes_canaries_left_asserting_only_disabled_layers(suite, tmp_path):
    state, conv = suite
    r = run_inproc("make_plan", conv, "--state-dir", state, "--mode", "smoke", "--layer", "routing",
                   "-o", tmp_path / "p.json")
    assert r.rc == 0
    notes = [n for n in r.json["notes"] if n.startswith("canary")]
    # c-00000008 asserts only answer; c-00000009 asserts routing too, so it still verifies
    assert len(notes) == 1 and "c-00000008" in notes[0] and "NOT VERIFIED" in notes[0]
    assert "c-00000008" in r.stderr
    r = run_inproc("make_plan", conv, "--state-dir", state, "--mode", "smoke", "--layer", "answer",
                   "-o", tmp_path / "p.json")
    assert not [n for n in r.json["notes"] if n.startswith("canary")]


# ---- scoring ----------------------------------------------------------------------------------

def test_oos_route_default_override_and_none(suite):
    assert plan_of(*suite)[0]["scoring"]["oos_route"] == "none"
    assert plan_of(*suite, "--oos-route", "out_of_scope")[0]["scoring"]["oos_route"] == "out_of_scope"
    assert plan_of(*suite, "--oos-route", "")[0]["scoring"]["oos_route"] is None


# ---- execution flags --------------------------------------------------------------------------

def test_execution_flags(suite):
    plan, _ = plan_of(*suite, "--timeout-s", "7.5", "--insecure-tls")
    assert plan["execution"] == {"timeout_s": 7.5, "insecure_tls": True}
    plan, _ = plan_of(*suite, "--max-attempts", "4")
    assert plan["execution"] == {"max_attempts": 4, "backoff_s": [1, 4, 16]}
    plan, _ = plan_of(*suite, "--backoff-s", "5,30")
    assert plan["execution"] == {"max_attempts": 3, "backoff_s": [5, 30]}
    plan, _ = plan_of(*suite, "--max-attempts", "2", "--backoff-s", "0.5")
    assert plan["execution"] == {"max_attempts": 2, "backoff_s": [0.5]}
    plan, _ = plan_of(*suite, "--max-attempts", "1")
    assert plan["execution"] == {"max_attempts": 1, "backoff_s": []}


@pytest.mark.parametrize("args, needle", [
    (("--max-attempts", "3", "--backoff-s", "1"), "needs exactly 2"),
    (("--backoff-s", "1,-2"), ">= 0"),
    (("--backoff-s", "1,x"), "not a number"),
    (("--backoff-s", "nan"), ">= 0"),
    (("--max-attempts", "0"), "between 1 and"),
    (("--timeout-s", "0"), "> 0"),
    (("--timeout-s", "inf"), "> 0"),
    (("--max-turns", "1"), "between 2 and"),
    (("--k", "two"), "invalid int"),
])
def test_execution_flag_refusals(suite, args, needle):
    assert needle in refused(*suite, *args)


def test_max_turns_only_with_conversations(tmp_path):
    convo = ("id: c-conv\nsplit: [full]\ncategory: multistep\ntest_type: MFT\ntemplate_id: null\n"
             "input:\n  turns:\n    - {user: hi}\n    - {user: bye}\nexpect: {route: shifts}\n")
    state = make_state(tmp_path, cases={"c-conv": convo}, dataset=None)
    conv = convert(state) / "converted.json"
    assert plan_of(state, conv)[0]["execution"] == {"max_turns": 12}
    assert plan_of(state, conv, "--max-turns", "4")[0]["execution"] == {"max_turns": 4}
    state2 = make_state(tmp_path / "b", dataset=None)
    conv2 = convert(state2) / "converted.json"
    r = run_inproc("make_plan", conv2, "--state-dir", state2, "--max-turns", "4", "-o", tmp_path / "p.json")
    assert "execution" not in json.loads((tmp_path / "p.json").read_text())
    assert any("--max-turns ignored" in n for n in r.json["notes"])
    plan, _ = plan_of(state2, conv2)
    assert plan["manifest_extra"]["dataset_version"] == 1  # no dataset.yaml


# ---- manifest_extra, git, paths ---------------------------------------------------------------

def test_manifest_extra_merges_and_protects(suite, tmp_path):
    state, conv = suite
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"models": {"app": "m-1"}, "temperature": 0.2, "dataset_version": 99,
                                 "app": {"git_sha": "f" * 40, "git_tree": "clean", "build": "42"},
                                 "judge": {"model": "judge-x"}}))
    r = run_inproc("make_plan", conv, "--state-dir", state, "--manifest-extra", extra)
    assert r.rc == 0
    me = json.loads(r.stdout)["manifest_extra"]
    assert me["models"] == {"app": "m-1"} and me["temperature"] == 0.2
    assert me["dataset_version"] == 3
    assert me["app"]["git_sha"] != "f" * 40 and me["app"]["build"] == "42" and me["app"]["name"] == "helpdesk-demo"
    assert me["judge"] == {"model": "judge-x", "status": "uncalibrated"}
    assert "dataset_version" in r.stderr and "app.git_sha" in r.stderr
    extra.write_text(json.dumps({"app": "x"}))
    assert "must be an object" in refused(state, conv, "--manifest-extra", extra)
    extra.write_text("[1]")
    assert "JSON object" in refused(state, conv, "--manifest-extra", extra)
    assert "cannot read" in refused(state, conv, "--manifest-extra", tmp_path / "nope.json")


def test_git_dirty_and_no_git(tmp_path):
    state = make_state(tmp_path / "repo", git=True, dataset=None)
    conv = convert(state) / "converted.json"
    (tmp_path / "repo" / "app.py").write_text("print('changed')\n")
    app = plan_of(state, conv)[0]["manifest_extra"]["app"]
    assert app["git_tree"] == "dirty" and len(app["git_sha"]) == 40
    plain = make_state(tmp_path / "plain", dataset=None)
    conv2 = convert(plain) / "converted.json"
    app = plan_of(plain, conv2)[0]["manifest_extra"]["app"]
    assert app["git_sha"] is None and app["git_tree"] == "n/a"


def test_judge_calibration_path_when_the_sidecar_exists(tmp_path):
    state = make_state(tmp_path, dataset=None)
    conv = convert(state) / "converted.json"
    assert plan_of(state, conv)[0]["paths"]["judge_calibration"] is None
    (state / "judge").mkdir()
    (state / "judge" / "calibration.json").write_text("{}")
    assert plan_of(state, conv)[0]["paths"]["judge_calibration"] == "judge/calibration.json"


# ---- run id, shards, bad inputs ---------------------------------------------------------------

def test_run_id(suite):
    assert plan_of(*suite, "--run-id", "regression-20261129T101500Z")[0]["run_id"] == "regression-20261129T101500Z"
    assert "must look like" in refused(*suite, "--run-id", "../../etc")
    assert "--mode is 'regression'" in refused(*suite, "--run-id", "smoke-20261129T101500Z")


def test_shards_refusals(suite):
    # the shard assignment itself: tests/test_shard_plan.py
    assert "only applies with --shards" in refused(*suite, "--durations", "x")
    assert "between 1 and" in refused(*suite, "--shards", "0")


def test_bad_converted_and_state_dir(suite, tmp_path):
    state, conv = suite
    assert "cannot read" in refused(state, tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    assert "not a converted suite" in refused(state, tmp_path / "bad.json")
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    assert "not a converted suite" in refused(state, tmp_path / "deep.json")
    doc = json.loads(conv.read_text())
    del doc["capability_matrix"]
    (tmp_path / "nomatrix.json").write_text(json.dumps(doc))
    assert "capability_matrix" in refused(state, tmp_path / "nomatrix.json")
    assert "does not exist" in refused(tmp_path / "nostate", conv)


def test_empty_selection_names_the_splits_present(tmp_path):
    state = make_state(tmp_path, cases={"c-1": "id: c-1\nsplit: [full]\n"}, dataset=None)
    conv = convert(state) / "converted.json"
    msg = refused(state, conv, "--mode", "holdout", "--allow-invalid")
    assert "--mode holdout" in msg and "'holdout'" in msg and "full: 1" in msg


# ---- the whole authoring half, as the --help examples say ------------------------------------

def test_help_examples_run_in_order(tmp_path):
    """Each script's --help example, run verbatim (cwd = a copy of the repo's example layout)."""
    target = tmp_path / "examples" / "helpdesk" / ".assay"
    source = ROOT / "examples" / "helpdesk" / ".assay"
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("work", "reports"))
    else:  # the example app lands separately; the fixture state dir stands in for it
        make_state(target.parent)
    for name in ("convert_suite", "validate_cases", "make_plan"):
        h = run_inproc(name, "--help")
        assert h.rc == 0
        example = h.stdout.split("example:", 1)[1].strip()
        argv = shlex.split(example)
        assert argv[:2] == ["python3", f"scripts/{name}.py"], example
        r = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py"), *argv[2:]],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (name, r.stdout, r.stderr)
    plan = json.loads((target / "work" / "plan.json").read_text())
    validate_plan(plan)
    assert plan["mode"] == "smoke"


def test_hand_written_state_dir_through_all_three_steps(tmp_path):
    """The issue's done-when: ~10 hand-written cases -> convert -> validate (no ERROR) -> a schema-valid plan."""
    state = make_state(tmp_path, git=True)
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    r = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                   "--adapter", work / "adapter.json", "--manifest", work / "manifest.json")
    assert r.rc == 0 and r.json["error_count"] == 0, r.stdout
    r = run_script("make_plan", work / "converted.json", "--mode", "regression", "--state-dir", state,
                   "-o", work / "plan.json")
    assert r.rc == 0, r.stdout
    plan = json.loads((work / "plan.json").read_text())
    validate_plan(plan)
    assert len(plan["cases"]) == 7 and plan["manifest_extra"]["app"]["git_tree"] == "clean"


def test_a_tag_typo_gets_the_closest_tag_and_the_tags_present(suite):
    # issue 24 D8: `--tag shfits` said only "no case selected"
    msg = refused(*suite, "--mode", "targeted", "--tag", "shfits")
    assert "no case selected" in msg and "did you mean 'shifts'?" in msg, msg
    assert "tags (unit or expect.route) in this split:" in msg and "shifts" in msg
