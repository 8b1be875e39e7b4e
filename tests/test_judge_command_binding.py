"""A command judge's calibration is bound to the code it runs, however the command launches it
(assay.judge.command_files): `bash -c "..."`, `python -m module`, a `.cjs` script. Before, these three
bound nothing (the sidecar's command_files was `{"python3 judge.py": null}` or `{}`), so a judge made
lazy in place after calibration kept "calibrated, gating". End to end: score_agreement.py, make_plan.py,
run_cases.py and gate.py as subprocesses over tests/test_trust_judge.py's tone suite."""

from __future__ import annotations

import json
import posixpath
import sys

import pytest

from fakeapp import FakeApp
from helpers import run_script, write_yaml
from test_trust_judge import STRICT_JUDGE, tone_app, tone_run, tone_state
from trust_fixtures import claims_plan, read

pytestmark = pytest.mark.slow


def _write(state):
    r = run_script("score_agreement", state / "annotations", "--write", state / "judge" / "calibration.json")
    return r


@pytest.mark.parametrize("form", ["bash -c", "python -m"])
def test_a_judge_launched_by_a_shell_string_or_python_m_is_bound_to_the_code_it_runs(tmp_path, form):
    state = tone_state(tmp_path)
    if form == "bash -c":
        command, edited = ["bash", "-c", f"exec {json.dumps(sys.executable)} strict_judge.py"], "strict_judge.py"
    else:
        (state / "grader").mkdir()
        (state / "grader" / "__init__.py").write_text("")
        (state / "grader" / "__main__.py").write_text("from grader.rules import judge\njudge()\n")
        (state / "grader" / "rules.py").write_text("def judge():\n" + "".join(
            f"    {line}\n" for line in STRICT_JUDGE.splitlines()))
        command, edited = [sys.executable, "-m", "grader"], "grader/rules.py"
    write_yaml(state / "judge" / "judge.yaml", f"provider: command\ncommand: {json.dumps(command)}\n")
    r = _write(state)
    assert r.rc == 0 and r.json["status"] == "calibrated", r.stdout
    bound = json.loads((state / "judge" / "calibration.json").read_text())["judge"]["identity"]["judges"][0]
    assert edited in bound["command_files"] and bound["command_files"][edited], bound

    with FakeApp(tone_app) as app:
        _, out = tone_run(state, app, "smoke-20261204T010000Z")
        g = run_script("gate", out)
        assert g.rc == 1 and "c-rude0001 (judged)" in g.stdout, g.stdout   # the calibrated judge gates

        path = state / edited   # the judge's code made lazy in place: same judge.yaml, another judge
        path.write_text(path.read_text().replace('bad = "idiot" in answer', "bad = False"))
        plan_r, out = tone_run(state, app, "smoke-20261204T020000Z")
        judged = read(out, "c-rude0001")["layers"]["judged"]
        assert judged["provisional"] is True and judged["provisional_verdict"] == "pass", judged
        assert f"(the content of {edited})" in judged["rubrics"][0]["why_provisional"], judged
        assert "judge: tone-v1 provisional again" in plan_r.stderr, plan_r.stderr
        g = run_script("gate", out)
        assert "judged (calibrated, gating)" not in g.stdout, g.stdout


def test_a_cjs_judge_script_is_bound_to_its_content(tmp_path):
    """`[node, judge.cjs]`: `.cjs` was not a script suffix, so nothing was bound (make_plan said nothing
    after the script was edited)."""
    state = tone_state(tmp_path)
    (state / "judge.cjs").write_text("process.stdout.write(JSON.stringify({verdict: 'pass'}))\n")
    write_yaml(state / "judge" / "judge.yaml", "provider: command\ncommand: [node, judge.cjs]\n")
    r = _write(state)
    assert r.rc == 0, r.stdout
    bound = json.loads((state / "judge" / "calibration.json").read_text())["judge"]["identity"]["judges"][0]
    assert list(bound["command_files"]) == ["judge.cjs"], bound
    (state / "judge.cjs").write_text("process.stdout.write(JSON.stringify({verdict: 'fail'}))\n")
    plan_r, _ = claims_plan(state, "--judge", run_id="smoke-20261204T030000Z")
    assert plan_r.rc == 0, plan_r.stdout
    assert "judge: tone-v1 provisional again" in plan_r.stderr and "(the content of judge.cjs)" in plan_r.stderr


@pytest.mark.parametrize("string, said", [
    ("cd judge && python3 strict_judge.py", "judge/judge.yaml command[2] changes directory (cd)"),
    ("python3 $JUDGE_DIR/strict_judge.py", "judge/judge.yaml command[2] names '$JUDGE_DIR/strict_judge.py', "
                                           "which is not a file under the state dir"),
])
def test_write_refuses_a_shell_string_whose_code_it_cannot_find(tmp_path, string, said):
    state = tone_state(tmp_path)
    before = (state / "judge" / "calibration.json").read_text()
    write_yaml(state / "judge" / "judge.yaml", f"provider: command\ncommand: [bash, -c, {json.dumps(string)}]\n")
    r = _write(state)
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert said in err and "write judge/judge.yaml command as an argv naming the script" in err, err
    assert (state / "judge" / "calibration.json").read_text() == before   # nothing written


def test_a_python_judge_is_read_past_the_interpreters_options(tmp_path):
    """`[python, -u, judge.py]` with judge.py missing was bound as `{"judge.py": null}` and --write wrote the
    calibration; `[python, -X, dev, -m, grader]` bound nothing (`dev` was read as the script). Now the
    script after the options is found, and a named script that is not there refuses --write."""
    state = tone_state(tmp_path)
    before = (state / "judge" / "calibration.json").read_text()
    write_yaml(state / "judge" / "judge.yaml", f"provider: command\ncommand: [{json.dumps(sys.executable)}, -u, judge.py]\n")
    r = _write(state)
    assert r.rc == 2, r.stdout
    assert r.json["error"].startswith(f"--write: judge/judge.yaml command[2] names 'judge.py', which is not a file "
                                      f"(it resolves to {state / 'judge.py'}; a relative path is from the state dir)"), r.json
    assert (state / "judge" / "calibration.json").read_text() == before   # nothing written
    (state / "grader").mkdir()
    (state / "grader" / "__init__.py").write_text("")
    (state / "grader" / "__main__.py").write_text("from grader.rules import judge\njudge()\n")
    (state / "grader" / "rules.py").write_text("def judge():\n" + "".join(f"    {line}\n" for line in STRICT_JUDGE.splitlines()))
    for argv in ([sys.executable, "-X", "dev", "-m", "grader"], [sys.executable, "-um", "grader"]):
        write_yaml(state / "judge" / "judge.yaml", f"provider: command\ncommand: {json.dumps(argv)}\n")
        r = _write(state)
        assert r.rc == 0, r.stdout
        bound = json.loads((state / "judge" / "calibration.json").read_text())["judge"]["identity"]["judges"][0]
        assert bound["command_files"].get("grader/rules.py") and bound["command_files"].get("grader/__main__.py"), (argv, bound)


@pytest.mark.parametrize("argv, line", [
    (["bash", "judge/judge.sh"], 'exec {py} judge/grade.py "$@"'),
    (["./judge/judge.sh"], 'if [ -n "$JUDGE_DEBUG" ]; then echo debug >&2; fi\n{py} "$(dirname "$0")/grade.py"'),
])
def test_a_shell_script_judge_is_bound_to_the_grader_it_runs(tmp_path, argv, line):
    """`[bash, judge/judge.sh]` whose judge.sh runs `python3 judge/grade.py`: only judge.sh was bound, so
    grade.py (the real judge) made lazy after calibration kept "judged (calibrated, gating)" and the gate
    passed a rude reply. Now the script is read as a `bash -c` string is, and grade.py is part of the judge."""
    state = tone_state(tmp_path)
    (state / "judge" / "grade.py").write_text(STRICT_JUDGE)
    script = state / "judge" / "judge.sh"
    script.write_text("#!/bin/sh\n# the tone judge\nset -e\n" + line.format(py=json.dumps(sys.executable)) + "\n")
    script.chmod(0o755)
    write_yaml(state / "judge" / "judge.yaml", f"provider: command\ncommand: {json.dumps(argv)}\n")
    r = _write(state)
    assert r.rc == 0 and r.json["status"] == "calibrated", r.stdout
    bound = json.loads((state / "judge" / "calibration.json").read_text())["judge"]["identity"]["judges"][0]
    key = f"{posixpath.dirname(argv[-1])}/grade.py"
    assert bound["command_files"].get(key), bound

    with FakeApp(tone_app) as app:
        _, out = tone_run(state, app, "smoke-20261205T010000Z")
        g = run_script("gate", out)
        assert g.rc == 1 and "c-rude0001 (judged)" in g.stdout, g.stdout   # the calibrated judge gates

        grader = state / "judge" / "grade.py"   # the grader made lazy in place: judge.yaml and judge.sh as calibrated
        grader.write_text(grader.read_text().replace('bad = "idiot" in answer', "bad = False"))
        plan_r, out = tone_run(state, app, "smoke-20261205T020000Z")
        judged = read(out, "c-rude0001")["layers"]["judged"]
        assert judged["provisional"] is True and judged["provisional_verdict"] == "pass", judged
        assert f"(the content of {key})" in judged["rubrics"][0]["why_provisional"], judged
        assert "judge: tone-v1 provisional again" in plan_r.stderr, plan_r.stderr
        g = run_script("gate", out)
        assert "judged (calibrated, gating)" not in g.stdout and "judged (provisional, never gating)" in g.stdout, g.stdout


def test_write_refuses_a_shell_script_judge_whose_code_it_cannot_find(tmp_path):
    state = tone_state(tmp_path)
    before = (state / "judge" / "calibration.json").read_text()
    (state / "judge" / "judge.sh").write_text('#!/bin/sh\nDIR="$(cd "$(dirname "$0")" && pwd)"\n'
                                              'exec python3 "$DIR/grade.py"\n')
    write_yaml(state / "judge" / "judge.yaml", "provider: command\ncommand: [sh, judge/judge.sh]\n")
    r = _write(state)
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert ("judge/judge.sh line 3 names '$DIR/grade.py', which is not a file under the state dir (in judge/judge.sh, "
            'name each script it runs by its path from the state dir (the judge\'s working directory) or as '
            '"$(dirname "$0")/NAME", with no cd)') in err, err
    assert (state / "judge" / "calibration.json").read_text() == before   # nothing written


def test_the_reader_reads_a_multi_line_shell_script_by_its_commands(tmp_path):
    """A unit of assay.judge.command_files: keywords, comments, continuations, a here-document, the
    `$(dirname "$0")` idioms, a sourced file; what it cannot bind is named by file and line."""
    from assay.judge.command_files import command_files
    (tmp_path / "judge" / "lib").mkdir(parents=True)
    for name in ("grade.py", "rules.py", "lib/helper.py"):
        (tmp_path / "judge" / name).write_text("")
    (tmp_path / "judge" / "lib.sh").write_text('python3 "${0%/*}/grade.py"\n')
    (tmp_path / "judge" / "judge.sh").write_text("""#!/usr/bin/env bash
# runs missing.py, says a comment
set -euo pipefail
echo "grading with other.py"
if [ -n "${X:-}" ]; then
  exec python3 "$(dirname "$0")/grade.py" "$@"
else
  PYTHONPATH=. python3 -u \\
     "${0%/*}/rules.py"
fi
for f in a b; do
  python3 `dirname -- "$0"`/lib/helper.py
done
python3 - <<'PY'
print("not.py")
PY
. judge/lib.sh
cd judge
python3 $HOME/x.py
""")
    files, problems = command_files(["bash", "judge/judge.sh"], tmp_path, {})
    assert sorted(files) == ["judge/grade.py", "judge/judge.sh", "judge/lib.sh", "judge/lib/helper.py",
                             "judge/rules.py"], files
    assert [p.split(" (in judge/judge.sh")[0] for p in problems] == [
        "judge/judge.sh line 18 changes directory (cd), so the files it runs are not where the state dir says",
        "judge/judge.sh line 19 names '$HOME/x.py', which is not a file under the state dir"], problems
    files, problems = command_files(["./judge/judge.sh"], tmp_path, {})   # the script run as the command
    assert "./judge/lib/helper.py" in files and len(problems) == 2, (files, problems)
