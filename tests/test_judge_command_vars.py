"""A command judge's variables, as the user meets them (run_cases.py as a subprocess against a fake app
on a loopback port): a `${VAR}` in its argv that is not set is a named pre-flight error (exit 3), never an
empty argument; a typo in its env_allowlist is named at pre-flight (stderr and the manifest's
`judge.probe.allowlisted_unset`), never only a command that fails on every call."""

from __future__ import annotations

import json
import sys

from fakeapp import app, state  # noqa: F401 (fixtures)
from test_judge_run import app_handler, go, judged_plan, rcase

SEEING_JUDGE = r'''
import json, os, sys
sys.stdin.read()
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "seen.json"), "w") as fh:
    json.dump({"argv": sys.argv[1:], "token": os.environ.get("JUDGE_TOKEN")}, fh)
print(json.dumps({"verdict": "fail", "evidence": [], "reason": "seen"}))
'''


def judge_plan(state, app, **config):
    app.handler = app_handler
    (state / "judge").mkdir(exist_ok=True)
    (state / "judge" / "seeing.py").write_text(SEEING_JUDGE)
    return judged_plan(state, app, dict({"provider": "command", "command": [sys.executable, "judge/seeing.py"]},
                                        **config), cases=[rcase("c-1", "full")])


def test_an_unset_variable_in_the_argv_is_named_never_an_empty_argument(app, state):
    plan = judge_plan(state, app, command=[sys.executable, "judge/seeing.py", "--mode", "${JUDGE_MODE}"])
    r, out = go(state, plan, {"JUDGE_MOD": "strict"})   # the variable exported under a typo
    assert r.rc == 3 and r.json["missing_env"] == ["JUDGE_MODE"], r.stdout
    assert r.json["referenced_by"] == {"JUDGE_MODE": "judge/judge.yaml: command[3]"}
    assert not (state / "judge" / "seen.json").exists() and not out.exists()


def test_a_typo_in_the_env_allowlist_is_named_at_pre_flight(app, state):
    plan = judge_plan(state, app, env_allowlist=["JUDGE_TOKN"])
    r, out = go(state, plan, {"JUDGE_TOKEN": "tok-5550123"})
    assert r.rc == 0, r.stdout + r.stderr
    assert ("judge/judge.yaml env_allowlist names variable(s) this environment does not set, so the judge "
            "command will not have them: JUDGE_TOKN") in r.stderr
    assert json.loads((out / "manifest.yaml").read_text())["judge"]["probe"]["allowlisted_unset"] == ["JUDGE_TOKN"]
    assert json.loads((state / "judge" / "seen.json").read_text())["token"] is None   # the allowlist holds


def test_the_script_a_variable_in_the_argv_names_is_bound_by_its_content(tmp_path, monkeypatch):
    """[python3, "${JUDGE_SCRIPT}"]: the calibration is bound to the script the value names (its content,
    keyed by the argument as written), so pointing the variable at another script is another judge."""
    import pytest as _pytest

    from assay.calibrate.sidecar import _bound_env
    from assay.core.errors import AssayError
    from assay.judge.binding import judge_identity
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "careful.py").write_text("print('careful')")
    (tmp_path / "judge" / "lazy.py").write_text("print('pass everything')")
    config = {"provider": "command", "command": ["python3", "${JUDGE_SCRIPT}"]}
    careful = judge_identity(config, tmp_path, {"JUDGE_SCRIPT": "judge/careful.py"})
    lazy = judge_identity(config, tmp_path, {"JUDGE_SCRIPT": "judge/lazy.py"})
    assert careful != lazy
    assert careful == judge_identity(config, tmp_path, {"JUDGE_SCRIPT": "judge/careful.py"})
    files = careful["judges"][0]["command_files"]
    assert list(files) == ["${JUDGE_SCRIPT}"] and files["${JUDGE_SCRIPT}"] is not None
    assert "careful.py" not in json.dumps(careful)   # the value is never recorded
    # a module the script imports from beside it is bound too, keyed beside the argument as written
    (tmp_path / "judge" / "careful.py").write_text("from rules import strict\nprint(strict)")
    (tmp_path / "judge" / "rules.py").write_text("strict = True")
    bound = judge_identity(config, tmp_path, {"JUDGE_SCRIPT": "judge/careful.py"})["judges"][0]["command_files"]
    assert sorted(bound) == ["${JUDGE_SCRIPT}", "rules.py"] and bound["rules.py"] is not None
    (tmp_path / "judge" / "rules.py").write_text("strict = False")
    assert judge_identity(config, tmp_path, {"JUDGE_SCRIPT": "judge/careful.py"})["judges"][0]["command_files"] != bound
    monkeypatch.delenv("JUDGE_SCRIPT", raising=False)
    with _pytest.raises(AssayError) as err:   # --write without it would bind to nothing
        _bound_env(config)
    assert err.value.code == 2 and "${JUDGE_SCRIPT} (command), not set" in str(err.value)
