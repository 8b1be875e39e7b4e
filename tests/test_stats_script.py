"""scripts/stats.py as a user meets it: argv in, JSON out, exit 0 or 2."""

from __future__ import annotations

import json

from helpers import run_script


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def verdicts(prefix, pattern):
    return [{"case_id": f"{prefix}{i}", "verdict": v} for i, v in enumerate(pattern)]


def test_compares_two_files(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", verdicts("c", ["fail"] * 7 + ["pass"] * 20))
    cand = write_jsonl(tmp_path / "cand.jsonl", verdicts("c", ["pass"] * 7 + ["pass"] * 20))
    r = run_script("stats", base, cand)
    assert r.rc == 0, r.stdout + r.stderr
    out = r.json
    assert out["n"] == 27 and out["fixed_by_candidate"] == 7 and out["broken_by_candidate"] == 0
    assert out["keep"] is True and out["verdict_words"] == "improved"
    assert out["mcnemar_exact_p_two_sided"] == 2 / 128
    assert out["mde_sentence"] == "n=27 cannot detect an improvement below 22.7pp or a worsening below 33.8pp"
    assert out["verdict_label"] == "improved" and out["proven"] is True


def test_text_says_not_proven_beside_improved(tmp_path):
    # issue 46 C1: 42 cases, 4 fixed, sign test p = 0.0625: "IMPROVED: 90.5% -> 100.0%" alone said too much
    base = write_jsonl(tmp_path / "base.jsonl", verdicts("c", ["fail"] * 4 + ["pass"] * 38))
    cand = write_jsonl(tmp_path / "cand.jsonl", verdicts("c", ["pass"] * 42))
    doc = run_script("stats", base, cand).json
    assert doc["sub_mde_keep"].startswith("KEPT BUT NOT PROVEN") and doc["sign_test_p_one_sided"] == 0.0625
    r = run_script("stats", base, cand, "--text")
    assert r.rc == 0
    first = r.stdout.splitlines()[0]
    assert first.startswith("IMPROVED, NOT PROVEN: pass rate 90.5% -> 100.0%"), first
    assert "  n=42: no improvement can be shown with 4 failing cases; " in r.stdout


def test_flags_change_the_reported_numbers(tmp_path):
    base = write_jsonl(tmp_path / "b.jsonl", verdicts("c", ["fail", "fail", "pass", "pass"]))
    cand = write_jsonl(tmp_path / "c.jsonl", verdicts("c", ["pass", "fail", "pass", "pass"]))
    default = run_script("stats", base, cand).json
    strict = run_script("stats", base, cand, "--alpha", "0.01", "--bayes-threshold", "0.9").json
    assert default["keep"] is False and default["p_candidate_better"] == 0.75
    assert strict["alpha"] == 0.01 and strict["threshold"] == 0.9
    # 4 cases: no split is significant at any alpha here, and the sentence says so at each alpha
    assert default["min_detectable_effect_at_this_n"] is strict["min_detectable_effect_at_this_n"] is None
    assert default["mde_sentence"].endswith("one-sided alpha 0.05")
    assert strict["mde_sentence"].endswith("one-sided alpha 0.01")


def test_blank_lines_are_skipped(tmp_path):
    base = tmp_path / "b.jsonl"
    base.write_text('\n{"case_id": "a", "verdict": "pass"}\n\n', encoding="utf-8")
    cand = tmp_path / "c.jsonl"
    cand.write_text('{"case_id": "a", "verdict": "pass"}\n\n', encoding="utf-8")
    assert run_script("stats", base, cand).rc == 0


def test_non_pass_fail_verdict_is_exit_2(tmp_path):
    base = write_jsonl(tmp_path / "b.jsonl", [{"case_id": "a", "verdict": "infra_error"}])
    cand = write_jsonl(tmp_path / "c.jsonl", [{"case_id": "a", "verdict": "pass"}])
    r = run_script("stats", base, cand)
    assert r.rc == 2
    assert "'infra_error' is not pass or fail" in r.json["error"]
    assert r.json["case_id"] == "a"


def test_no_shared_ids_is_exit_2(tmp_path):
    base = write_jsonl(tmp_path / "b.jsonl", verdicts("x", ["pass"]))
    cand = write_jsonl(tmp_path / "c.jsonl", verdicts("y", ["pass"]))
    r = run_script("stats", base, cand)
    assert r.rc == 2 and "check dataset_version" in r.json["error"]


def test_an_empty_file_is_named_as_empty_not_a_dataset_version_mismatch(tmp_path):
    """An empty candidate (a run that scored no case) said "no shared case ids ... check dataset_version":
    it names the empty file and the fix."""
    base = write_jsonl(tmp_path / "b.jsonl", verdicts("c", ["pass", "fail"]))
    cand = tmp_path / "c.jsonl"
    cand.write_text("", encoding="utf-8")
    for argv, side, path in (((base, cand), "candidate", cand), ((cand, base), "baseline", cand)):
        r = run_script("stats", *argv)
        assert r.rc == 2 and f"the {side} file {path} is empty" in r.json["error"], r.stdout
        assert "dataset_version" not in r.json["error"] and "gate.py" in r.json["error"]
        assert r.json["key"] == side


def test_malformed_jsonl_names_file_and_line(tmp_path):
    base = tmp_path / "b.jsonl"
    base.write_text('{"case_id": "a", "verdict": "pass"}\n{"case_id": "b", "verdict":\n', encoding="utf-8")
    cand = write_jsonl(tmp_path / "c.jsonl", verdicts("a", ["pass"]))
    r = run_script("stats", base, cand)
    assert r.rc == 2
    assert f"{base}:2: not valid JSON" in r.json["error"]
    assert r.json["line"] == 2 and r.json["file"] == str(base)


def test_non_object_line_and_missing_file(tmp_path):
    base = tmp_path / "b.jsonl"
    base.write_text('["a", "pass"]\n', encoding="utf-8")
    r = run_script("stats", base, base)
    assert r.rc == 2 and ":1: expected a JSON object" in r.json["error"]
    r = run_script("stats", tmp_path / "nope.jsonl", base)
    assert r.rc == 2 and "cannot read" in r.json["error"] and "nope.jsonl" in r.json["error"]


def test_alpha_and_threshold_out_of_range(tmp_path):
    base = write_jsonl(tmp_path / "b.jsonl", verdicts("a", ["pass"]))
    for flag, value in (("--alpha", "0"), ("--alpha", "1"), ("--alpha", "1.5"), ("--bayes-threshold", "1")):
        r = run_script("stats", base, base, flag, value)
        assert r.rc == 2, (flag, value)
        assert "out of range" in r.json["error"]


def test_usage_error_is_json_exit_2(tmp_path):
    r = run_script("stats")
    assert r.rc == 2 and "error" in r.json


def test_help_and_version():
    r = run_script("stats", "--help")
    assert r.rc == 0 and "example:" in r.stdout and "verdicts_for_stats.jsonl" in r.stdout
    r = run_script("stats", "--version")
    assert r.rc == 0 and r.stdout.startswith("assay ")


def test_the_same_file_on_both_sides_is_exit_2_naming_it(tmp_path):
    """`stats.py A A` paired every case with itself and said WITHIN NOISE (exit 0): no measurement."""
    (tmp_path / "run").mkdir()
    base = write_jsonl(tmp_path / "run" / "verdicts_for_stats.jsonl", verdicts("c", ["pass", "fail", "pass"]))
    for other in (base, tmp_path / "run" / ".." / "run" / "verdicts_for_stats.jsonl"):
        r = run_script("stats", base, other, "--text")
        assert r.rc == 2, r.stdout + r.stderr
        err = json.loads(r.stdout or r.stderr)
        assert "the same file" in err["error"] and str(other) in err["error"], err
        assert "baseline run's verdicts_for_stats.jsonl first" in err["error"], err


def test_a_verdicts_file_saved_with_a_utf8_bom_is_read(tmp_path):
    """A BOM (a Windows editor's save) was `not valid JSON (... decode using utf-8-sig)`: Python's hint, no fix."""
    base = tmp_path / "b.jsonl"
    base.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in verdicts("c", ["fail", "pass"])).encode())
    cand = write_jsonl(tmp_path / "c.jsonl", verdicts("c", ["pass", "pass"]))
    r = run_script("stats", base, cand)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.json["n"] == 2 and r.json["fixed_by_candidate"] == 1, r.json
