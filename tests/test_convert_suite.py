"""convert_suite.py: state dir (YAML) -> converted suite; strict YAML; sources; --split-dir."""

from __future__ import annotations

import json
import os

import pytest

from fixtures_authoring import ADAPTER, CASES, make_state, run_inproc
from helpers import run_script, write_yaml

from assay.core.errors import AssayError
from assay.schemas import validate
from assay.core.strict_yaml import MAX_NODES, loads


def convert_err(state, *extra):
    r = run_inproc("convert_suite", state, *extra)  # in-process: same parser, same JSON, less time
    assert r.rc == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    return r.json["error"]


# ---- the happy path -------------------------------------------------------------------------

def test_converts_a_state_dir_with_split_outputs(tmp_path):
    state = make_state(tmp_path)
    write_yaml(state / "datasets" / "templates" / "invoice-total.yaml", "not: a case\n")
    work = tmp_path / "out"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    conv = json.loads((work / "converted.json").read_text())
    validate(conv, "converted", source="converted.json")
    ids = [c["id"] for c in conv["cases"]]
    assert ids == sorted(ids) and len(ids) == len(CASES)
    assert conv["sources"]["c-00000001"] == "datasets/billing/c-00000001.yaml"
    assert conv["sources"]["c-00000008"] == "datasets/c-00000008.yaml"
    assert all(not os.path.isabs(p) and ".." not in p for p in conv["sources"].values())
    assert conv["adapter"]["invocation"]["base_url"] == "${HELPDESK_BASE_URL}"  # never resolved
    assert conv["capability_matrix"]["tool_selection"] == {"enabled": False, "blocked_by": "no traces"}
    assert conv["scoring"] == {"oos_handling": "route:none", "record_id_pattern": "INV-[0-9]{4}",
                               "route_targets": ["invoices", "shifts"]}   # the linter's unknown_route
    assert conv["profile"]["judge"]["status"] == "uncalibrated"
    assert conv["manifest"]["dataset_version"] == 3
    assert conv["cases"][0]["review"]["at"] == "2026-11-01"
    assert sorted(p.name for p in work.iterdir()) == [
        "adapter.json", "capabilities.json", "converted.json", "manifest.json", "suite.json"]
    suite = json.loads((work / "suite.json").read_text())
    assert suite["cases"] == conv["cases"] and suite["sources"] == conv["sources"]
    assert json.loads((work / "capabilities.json").read_text()) == conv["capability_matrix"]
    assert json.loads((work / "adapter.json").read_text()) == conv["adapter"]
    assert r.json["cases"] == len(CASES)


def test_stdout_mode_and_no_manifest_json_without_dataset_yaml(tmp_path):
    state = make_state(tmp_path, dataset=None)
    r = run_script("convert_suite", state, "--split-dir", tmp_path / "w")
    assert r.rc == 0
    assert r.json["manifest"] is None
    assert not (tmp_path / "w" / "manifest.json").exists()


def test_env_var_refs_stay_unresolved_even_when_set(tmp_path):
    state = make_state(tmp_path)
    r = run_script("convert_suite", state, env={"HELPDESK_BASE_URL": "http://secret-host:1"})
    assert r.rc == 0 and "secret-host" not in r.stdout


# ---- strictness -----------------------------------------------------------------------------

def test_duplicate_key_names_file_and_line(tmp_path):
    state = make_state(tmp_path, cases={"c-1": "id: c-1\nsplit: [full]\nsplit: [smoke]\n"})
    msg = convert_err(state)
    assert "datasets/c-1.yaml:3" in msg and "duplicate key 'split'" in msg and "line 2" in msg


@pytest.mark.parametrize("value", [".nan", ".inf", "-.Inf", "1.0e+999"])
def test_nan_and_inf_are_refused(tmp_path, value):
    state = make_state(tmp_path, cases={"c-1": f"id: c-1\nexpect:\n  result: {{scalar: {value}}}\n"})
    msg = convert_err(state)
    assert "datasets/c-1.yaml:3" in msg and "NaN or infinite" in msg


def test_same_id_in_two_files_names_both(tmp_path):
    state = make_state(tmp_path, cases={"c-1": "id: c-dup\n", "c-2": "id: c-dup\n"})
    r = run_inproc("convert_suite", state)
    assert r.rc == 2
    assert "datasets/c-1.yaml" in r.json["error"] and "datasets/c-2.yaml" in r.json["error"]
    assert r.json["files"] == ["datasets/c-1.yaml", "datasets/c-2.yaml"]


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))


def test_alias_bomb_is_an_error_not_a_blowup(tmp_path):
    state = make_state(tmp_path, cases={"c-1": "id: c-1\n" + BOMB})
    msg = convert_err(state)
    assert "datasets/c-1.yaml" in msg and "alias" in msg


def test_alias_bomb_unit_stops_at_the_node_limit():
    with pytest.raises(AssayError) as err:
        loads(BOMB, "bomb.yaml")
    assert str(MAX_NODES) in err.value.message


def test_recursive_alias_is_an_error():
    with pytest.raises(AssayError) as err:
        loads("a: &a [*a]\n", "r.yaml")
    assert "nesting deeper" in err.value.message


@pytest.mark.parametrize("depth", [100, 5000, 100_000])   # 100,000: libyaml overflowed the C stack
def test_deep_nesting_is_an_error_not_a_crash(depth):
    with pytest.raises(AssayError) as err:
        loads("a: " + "[" * depth + "]" * depth + "\n", "deep.yaml")
    assert "nesting" in err.value.message and "deep.yaml" in err.value.message


def test_small_aliases_still_work():
    value, _ = loads("base: &b {must_contain: [x]}\ncopy: *b\n", "ok.yaml")
    assert value["copy"] == {"must_contain": ["x"]}


@pytest.mark.parametrize("text, needle", [
    ("id: c-1\nx: !!python/object:os.system ls\n", "unsupported YAML tag"),
    ("id: c-1\n<<: {a: 1}\n", "merge keys"),
    ("id: c-1\n---\nid: c-2\n", "more than one YAML document"),
    ("id: c-1\nsplit: [full\n", "invalid YAML"),
    ("id: c-1\nyes: 1\n", "quote it"),
    ("id: c-1\n[a]: 1\n", "plain scalar"),
])
def test_hostile_or_malformed_yaml(tmp_path, text, needle):
    state = make_state(tmp_path, cases={"c-1": text})
    msg = convert_err(state)
    assert needle in msg and "datasets/c-1.yaml" in msg


def test_non_utf8_and_empty_and_non_mapping_case_files(tmp_path):
    state = make_state(tmp_path, cases={})
    (state / "datasets" / "c-1.yaml").write_bytes(b"id: c-\xff\n")
    assert "not UTF-8" in convert_err(state)
    (state / "datasets" / "c-1.yaml").write_text("")
    assert "empty" in convert_err(state)
    (state / "datasets" / "c-1.yaml").write_text("- id: c-1\n")
    assert "must be a YAML mapping" in convert_err(state)


def test_case_schema_error_names_line_and_key(tmp_path):
    state = make_state(tmp_path, cases={"c-1": "id: c-1\nsplit: [full]\ngating: 'yes'\n"})
    msg = convert_err(state)
    assert "datasets/c-1.yaml:3" in msg and "gating" in msg


def test_adapter_unknown_key_names_line_and_key_path(tmp_path):
    bad = ADAPTER.replace("  timeout_s: 10\n", "  timeout_s: 10\n  sesion: fresh\n")
    state = make_state(tmp_path, adapter=bad)
    r = run_inproc("convert_suite", state)
    assert r.rc == 2
    line = bad.splitlines().index("  sesion: fresh") + 1
    assert f"adapter.yaml:{line}" in r.json["error"] and "invocation" in r.json["error"]
    assert "'sesion'" in r.json["error"]


def test_profile_needs_a_capability_matrix(tmp_path):
    state = make_state(tmp_path, profile="profile_version: 1\n")
    msg = convert_err(state)
    assert "profile.yaml" in msg and "capability_matrix" in msg


def test_missing_files_and_dirs(tmp_path):
    assert "does not exist" in convert_err(tmp_path / "nope")
    state = make_state(tmp_path, cases={})
    assert "no case files" in convert_err(state)
    (state / "adapter.yaml").unlink()
    assert "adapter.yaml is missing" in convert_err(state)


def test_symlink_leaving_the_state_dir_is_refused(tmp_path):
    outside = tmp_path / "outside.yaml"
    outside.write_text(CASES["c-00000001"])
    state = make_state(tmp_path / "app")
    (state / "datasets" / "c-evil.yaml").symlink_to(outside)
    msg = convert_err(state)
    assert "c-evil.yaml" in msg and "leaves the state dir" in msg


def test_symlinked_dir_leaving_the_state_dir_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    state = make_state(tmp_path / "app")
    (state / "datasets" / "more").symlink_to(tmp_path / "elsewhere")
    assert "leaves the state dir" in convert_err(state)


def test_symlink_inside_the_state_dir_is_read(tmp_path):
    state = make_state(tmp_path, cases={"c-1": CASES["c-00000001"]})
    (state / "shared").mkdir()
    (state / "shared" / "c-2.yaml").write_text(CASES["c-00000008"])
    (state / "datasets" / "c-2.yaml").symlink_to(state / "shared" / "c-2.yaml")
    r = run_inproc("convert_suite", state)
    assert r.rc == 0, r.stdout
    assert r.json["sources"]["c-00000008"] == "datasets/c-2.yaml"


def test_id_less_cases_sort_last_and_keep_their_source(tmp_path):
    state = make_state(tmp_path, cases={"c-b": "id: c-b\n", "c-a": "split: [full]\n", "c-c": "id: 7\n"})
    r = run_inproc("convert_suite", state)
    assert r.rc == 0
    assert [c.get("id") for c in r.json["cases"]] == ["c-b", None, 7]
    assert r.json["unnamed_sources"] == ["datasets/c-a.yaml", "datasets/c-c.yaml"]


def test_unwritable_output_is_exit_2(tmp_path):
    state = make_state(tmp_path)
    (tmp_path / "file").write_text("x")
    msg = convert_err(state, "-o", tmp_path / "file" / "sub" / "c.json")
    assert "cannot write" in msg


def test_auth_form_error_names_the_allowed_forms(tmp_path):
    bad = ADAPTER.replace("auth: {type: bearer, token_env: HELPDESK_TOKEN}", "auth: {type: bearer}")
    state = make_state(tmp_path, adapter=bad)
    msg = convert_err(state)
    assert "adapter.yaml:12: invocation.auth" in msg and "{type: bearer, token_env: NAME}" in msg
