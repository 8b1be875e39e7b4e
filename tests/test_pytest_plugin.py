"""`pytest --assay STATE_DIR` as a user runs it: pytest as a subprocess on a copy of the example
app's state dir, the app on a free port. One item per case; the planted regressions (--break)
fail with the failed layers' expected vs actual; the exit code follows the gate; --lf reruns
only the failures (a targeted run); -k narrows the run itself; -n is run on the controller; a
killed session resumes its run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpdesk_util import HoldingProxy, copy_state, helpdesk
from hunt_paths import edit
from rundir_util import committed_lines

pytestmark = pytest.mark.slow


# The test venv holds agent frameworks for other tests; one of them (langsmith) registers a pytest
# plugin that costs ~1-2 s of CPU to import in every session. It has nothing to do with assay's.
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin"]


def pytest_run(cwd: Path, env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*PYTEST, "--assay", ".assay", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8",
                          errors="replace", timeout=timeout)


def outcomes(stdout: str) -> dict[str, str]:
    """nodeid -> PASSED/FAILED/SKIPPED/XFAIL from `-rA` short summary lines."""
    found = {}
    for line in stdout.splitlines():
        m = re.match(r"^(PASSED|FAILED|SKIPPED|XFAIL|ERROR) (?:\[\d+\] )?\.assay::(c-[0-9a-f]+)", line)
        if m:
            found[m.group(2)] = m.group(1)
    return found


def rows(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["case_id"]: r for r in map(json.loads, lines)}


def run_dirs(state: Path) -> list[Path]:
    return sorted(p for p in (state / "reports").iterdir() if p.is_dir())


def test_break_fails_the_regressions_then_lf_reruns_only_them(tmp_path):
    state = copy_state(tmp_path)
    with helpdesk(state, broken=True) as env:
        first = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-rA", "-n", "2")
    out = first.stdout
    assert first.returncode == 1, out + first.stderr
    (run_dir,) = run_dirs(state)
    verdicts = rows(run_dir)
    seen = outcomes(out)
    # one item per planned case, each with the runner's own verdict
    assert set(seen) == set(verdicts) and len(seen) == 20
    failing = {cid for cid, r in verdicts.items() if r["verdict"] == "fail" and r["gating"]}
    assert failing and {cid for cid, o in seen.items() if o == "FAILED"} == failing
    assert {cid for cid, o in seen.items() if o == "PASSED"} == {c for c, r in verdicts.items() if r["verdict"] == "pass"}
    # readable: the failed layers with expected vs observed, the user's input, no traceback
    assert 'routing: expected "billing", observed "tech_support" (from response)' in out
    assert "input: I was charged but I can't log in" in out
    assert "execution: expected {\"scalar\": 245.75}, actual {\"scalar\": 200.5" in out
    assert "Traceback" not in out and "site-packages" not in out
    # the gate's one-screen summary is the session's verdict; -n ran on this process, said so
    assert "assay gate: CLOSED" in out and f"{run_dir.name}: FAIL" in out and "gate closed: 11 gating failure(s)" in out
    assert "the items run here, not on xdist workers" in out

    with helpdesk(state, broken=False, app_dir="app2") as env:
        rerun = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-rA", "--lf", "--assay-baseline", "auto")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert set(outcomes(rerun.stdout)) == failing
    assert all(o == "PASSED" for o in outcomes(rerun.stdout).values())
    second = [d for d in run_dirs(state) if d != run_dir]
    assert len(second) == 1 and second[0].name.startswith("targeted-")
    assert set(rows(second[0])) == failing  # the runner ran exactly the failures, nothing else
    assert "assay gate: open" in rerun.stdout
    # --assay-baseline auto: the newest earlier smoke run, paired on the cases both ran
    assert f"compared with the baseline {run_dir.name} (stats.py):" in rerun.stdout
    assert "IMPROVED: pass rate 0.0% -> 100.0%" in rerun.stdout and "n=11 paired cases" in rerun.stdout


def test_w_error_finds_no_warning_the_runner_left(tmp_path):
    """`pytest -W error` (or `filterwarnings = error` in the ini, common in CI) over a clean app: the runner
    runs in the session's process and left its case workers' keep-alive sockets (one pool per worker
    thread, close() reached only its own) and its spill files to the garbage collector. Each
    ResourceWarning became an ERROR at setup of the first case item (a page of traceback) and the
    session exited 1 over an open gate: the exit code no longer was the gate's."""
    state = copy_state(tmp_path)
    with helpdesk(state, broken=False) as env:
        done = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-W", "error", "-rA")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "20 passed" in done.stdout and "error" not in done.stdout.splitlines()[-1], out
    assert "ResourceWarning" not in out and "Traceback" not in out, out
    assert "assay gate: open" in done.stdout


def add_title(state: Path, case_id: str, title: str) -> None:
    case = state / "datasets" / f"{case_id}.yaml"
    case.write_text(case.read_text(encoding="utf-8").replace(f"id: {case_id}\n", f"id: {case_id}\ntitle: {title}\n"),
                    encoding="utf-8")


def test_k_narrows_the_run_and_x_stops_at_the_first_failure(tmp_path):
    state = copy_state(tmp_path)
    add_title(state, "c-0f1bfb2c", "charged but locked out")
    with helpdesk(state, broken=True) as env:
        # -k matches a case's title (and unit, route, category) as well as its id
        done = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-rA", "-k", "locked or c-34a94041", "-x")
    assert done.returncode == 1, done.stdout
    # the run is exactly the -k selection (a targeted run of those ids) ...
    (run_dir,) = run_dirs(state)
    assert run_dir.name.startswith("targeted-") and set(rows(run_dir)) == {"c-0f1bfb2c", "c-34a94041"}
    # ... and -x stops the reporting at the first failing item (the run itself is one process)
    assert outcomes(done.stdout) == {"c-0f1bfb2c": "FAILED"}
    assert "stopping after 1 failures" in done.stdout
    assert "_ c-0f1bfb2c: charged but locked out _" in done.stdout  # the id with its title
    assert "2 of 20 case(s) selected: a targeted run of exactly those" in done.stdout


def test_a_case_node_id_as_an_argument_names_k(tmp_path):
    """A FAILED line's node id pasted back as an argument (`pytest --assay .assay .assay::c-0f1bfb2c`, how
    pytest users rerun one test) was refused in pytest's words, `directory argument cannot contain ::
    selection parts`, naming no way to run the case. Now the refusal names -k (and --lf), and -k runs it.
    The failure names the case file (it named only the state dir: where to edit the expectation?)."""
    state = copy_state(tmp_path)
    with helpdesk(state, broken=True) as env:
        pasted = pytest_run(tmp_path, env, "--assay-mode", "smoke", ".assay::c-0f1bfb2c")
        assert pasted.returncode == 4, pasted.stdout + pasted.stderr
        assert (".assay::c-0f1bfb2c: a case of the assay suite is not a path pytest can collect; select it with -k "
                "(pytest --assay .assay -k c-0f1bfb2c: a targeted run") in pasted.stderr, pasted.stderr
        assert not (state / "reports").exists()   # refused before anything was planned or sent
        by_k = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-rA", "-vv", "-k", "c-0f1bfb2c")
    assert by_k.returncode == 1 and outcomes(by_k.stdout) == {"c-0f1bfb2c": "FAILED"}, by_k.stdout
    # the node id stays <state dir>::<case id>; the item's location, and its failure, name the case file
    assert ".assay::c-0f1bfb2c <- .assay/datasets/c-0f1bfb2c.yaml FAILED" in by_k.stdout, by_k.stdout
    assert "\ncase file: .assay/datasets/c-0f1bfb2c.yaml\n" in by_k.stdout, by_k.stdout


def test_a_killed_session_resumes_its_run(tmp_path):
    state = copy_state(tmp_path)
    with helpdesk(state, broken=False) as env:
        proxy = HoldingProxy(env["HELPDESK_BASE_URL"], pass_chats=6)
        try:
            held_env = dict(env, HELPDESK_BASE_URL=proxy.url)
            proc = subprocess.Popen([*PYTEST, "--assay", ".assay", "--assay-mode", "smoke"],
                                    cwd=tmp_path, env=held_env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (proxy.held and any(committed_lines(d) for d in state.glob("reports/*/"))):
                time.sleep(0.05)
            time.sleep(0.3)  # let the answered cases land
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            proxy.close()
        (run_dir,) = run_dirs(state)
        kept = committed_lines(run_dir)
        assert kept and len(kept) < 20
        assert json.loads((run_dir / "results.json").read_text())["summary"]["status"] == "running"
        # a comment added meanwhile changes nothing the plan holds: the same plan, resumed (it was
        # "this session's plan differs", a new run: the plan's source digest is of the files' bytes)
        case = state / "datasets" / "c-0f1bfb2c.yaml"
        case.write_text(case.read_text(encoding="utf-8") + "# reviewed\n", encoding="utf-8")
        resumed = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-rA", "--assay-resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resumed the interrupted run {run_dir.name}" in resumed.stdout
    assert run_dirs(state) == [run_dir]  # the same run dir, finished
    assert json.loads((run_dir / "results.json").read_text())["summary"]["status"] == "ok"
    after = committed_lines(run_dir)
    assert len(after) == 20 and all(after[cid] == line for cid, line in kept.items())  # finished cases kept
    assert len(outcomes(resumed.stdout)) == 20


def test_inactive_without_assay_and_clear_refusals(tmp_path):
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert True\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    plain = subprocess.run([*PYTEST, "-q"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and "1 passed" in plain.stdout and "assay" not in plain.stdout
    orphan = subprocess.run([*PYTEST, "--assay-mode", "smoke"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert orphan.returncode == 4 and "--assay-mode needs --assay STATE_DIR" in orphan.stderr
    state = copy_state(tmp_path)
    no_tag = subprocess.run([*PYTEST, "--assay", str(state), "--assay-mode", "targeted"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert no_tag.returncode == 4 and "--assay-mode targeted needs --assay-tag" in no_tag.stderr
    # the runner's pre-flight refusal (no app configured: its variables unset) stops the session, said plainly
    unset = {k: v for k, v in env.items() if not k.startswith("HELPDESK_")}
    no_app = subprocess.run([*PYTEST, "--assay", str(state), "--assay-mode", "smoke"],
                            cwd=tmp_path, env=unset, capture_output=True, text=True, timeout=60)
    assert no_app.returncode == 4, no_app.stdout + no_app.stderr
    assert "run_cases.py exit 3: pre-flight: environment variable(s) not set or empty: HELPDESK_BASE_URL" in no_app.stderr
    assert "Traceback" not in no_app.stdout + no_app.stderr
    nowhere = subprocess.run([*PYTEST, "--assay", str(tmp_path)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
    assert nowhere.returncode == 4 and "did you mean --assay" in nowhere.stderr
    # `assay = .assay` in an ini file: pytest only warned ("Unknown config option") and the session passed
    # on the unit tests alone, the suite never run; now a usage error naming the file, the key and addopts
    (tmp_path / "pytest.ini").write_text("[pytest]\nassay = .assay\nassay_mode = smoke\n", encoding="utf-8")
    in_ini = subprocess.run([*PYTEST, "-q"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert in_ini.returncode == 4, in_ini.stdout + in_ini.stderr
    assert f"{tmp_path / 'pytest.ini'}: assay, assay_mode: not an option the assay plugin reads from an ini file" \
        in in_ini.stderr and "addopts = --assay .assay --assay-mode smoke" in in_ini.stderr
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -q\n", encoding="utf-8")   # any other ini: as before
    assert subprocess.run([*PYTEST], cwd=tmp_path, env=env, capture_output=True, timeout=60).returncode == 0


def test_baseline_auto_gates_on_the_cases_newly_failing(tmp_path):
    state = copy_state(tmp_path)
    with helpdesk(state, broken=False) as env:
        clean = pytest_run(tmp_path, env, "--assay-mode", "smoke", "--assay-baseline", "auto")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    # the first run has nothing to compare with: said, and gated alone (open)
    assert "--assay-baseline auto: not gated on regressions" in clean.stdout and "assay gate: open" in clean.stdout
    (base,) = run_dirs(state)
    with helpdesk(state, broken=True, app_dir="app2") as env:
        broken = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-rA", "--assay-baseline", "auto")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    # the session's gate is gate.py --baseline auto: the regressions against the clean run, named first
    assert f"compared with {base.name}: 11 newly failing" in broken.stdout
    assert "gating case(s) newly failing against" in broken.stdout


def test_baseline_auto_for_the_whole_suite_never_pairs_with_a_closed_run(tmp_path):
    """The selection fallback (a -k/--lf run with no targeted baseline) also ran for the whole suite:
    with only a closed earlier run, the runner was handed it (comparison.json, "IMPROVED" in the
    terminal) while the session's gate said it had no baseline. The whole suite's baseline is the
    compare rule's alone: an earlier run whose gate was open."""
    state = copy_state(tmp_path)
    with helpdesk(state, broken=True) as env:
        first = pytest_run(tmp_path, env, "--assay-mode", "smoke")
    assert first.returncode == 1, first.stdout + first.stderr
    with helpdesk(state, broken=False, app_dir="app2") as env:
        clean = pytest_run(tmp_path, env, "--assay-mode", "smoke", "--assay-baseline", "auto")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    newest = max(run_dirs(state), key=lambda d: d.name)
    assert not (newest / "comparison.json").exists() and "IMPROVED" not in clean.stdout, clean.stdout
    assert "--assay-baseline auto: not gated on regressions" in clean.stdout, clean.stdout


def junit_testcases(path: Path) -> dict[tuple[str, str], ET.Element]:
    """(classname, name) -> <testcase> of a --junitxml report."""
    return {(tc.get("classname"), tc.get("name")): tc for tc in ET.parse(path).getroot().iter("testcase")}


def test_junitxml_carries_the_gate_when_every_case_passes(tmp_path):
    """Every case passes on the clean app but the profile's p95 budget is one the app exceeds: the
    session exited 1 while `--junitxml` held 20 passing testcases and no failure, so a CI dashboard
    reading JUnit showed "all tests passed" beside a red job. The report now carries the gate as
    gate.py --junit does (classname assay.gate, name gate): failed with the gate's reasons; passed
    once the gate opens. The testcase is no item: the terminal still counts 20."""
    state = copy_state(tmp_path)
    budgets = state / "profile.yaml"
    edit(budgets, "max_p95_latency_s: 8 ", "max_p95_latency_s: 0.000001 ")
    with helpdesk(state, broken=False) as env:
        closed = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-rA", "--junitxml", "closed.xml")
        edit(budgets, "max_p95_latency_s: 0.000001 ", "max_p95_latency_s: 8 ")
        opened = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-rA", "--junitxml", "open.xml")
    out = closed.stdout
    assert closed.returncode == 1 and "assay gate: CLOSED" in out, out + closed.stderr
    assert set(outcomes(out).values()) == {"PASSED"} and len(outcomes(out)) == 20, out
    assert "20 passed" in out.splitlines()[-1], out   # no item more: counts, -k and --lf as they were
    cases = junit_testcases(tmp_path / "closed.xml")
    gate = cases.pop(("assay.gate", "gate"))
    assert len(cases) == 20 and not any(tc.find("failure") is not None for tc in cases.values())
    failure = gate.find("failure")
    assert failure is not None, ET.tostring(gate, encoding="unicode")
    # the reason is the session's gate's own, as its terminal section says it
    reasons = [line.strip()[len("gate closed: "):] for line in out.splitlines()
               if line.strip().startswith("gate closed: ")]
    assert len(reasons) == 1 and reasons[0].startswith("p95 latency "), out
    assert failure.get("message") == f"gate closed: {reasons[0]}"
    # its text: the reasons, then the gate's one-screen summary and the run dir (gate.py --junit's system-out)
    run_dir = Path(re.search(r"^run dir: (.+)$", out, re.M).group(1))
    assert failure.text.startswith(reasons[0] + "\n\n" + f"{run_dir.name}: FAIL -- closed: p95 latency"), failure.text
    assert failure.text.endswith(f"\n  gate closed: {reasons[0]}\nrun dir: {run_dir}"), failure.text
    suite = ET.parse(tmp_path / "closed.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("21", "1")

    assert opened.returncode == 0 and "assay gate: open" in opened.stdout, opened.stdout + opened.stderr
    gate = junit_testcases(tmp_path / "open.xml")[("assay.gate", "gate")]
    assert gate.find("failure") is None and gate.find("error") is None, ET.tostring(gate, encoding="unicode")


def test_a_selection_in_the_configuration_that_drops_cases_is_refused(tmp_path):
    """`addopts = -m unit` (the project's unit tests by default) with `pytest --assay .assay` in CI: every case
    was deselected, nothing sent to the app, `not gated (no case ran)` and exit 0 on the unit tests: a green
    job over a suite that fails. A `-k "not billing"` in PYTEST_ADDOPTS dropped some cases and gated the rest
    as if they were the suite. Now a usage error naming the option, where it was set, and the fix; a selection
    typed on the command line still runs just what it selects."""
    state = copy_state(tmp_path)
    (tmp_path / "test_unit.py").write_text("import pytest\n\n\n@pytest.mark.unit\ndef test_u():\n    assert True\n",
                                           encoding="utf-8")
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\nmarkers =\n    unit: fast\naddopts = -m unit --strict-markers\n", encoding="utf-8")
    with helpdesk(state, broken=True) as env:
        by_ini = pytest_run(tmp_path, env, "--assay-mode", "smoke")
        # the fix the refusal names: the cases carry the marker `assay` (-m typed here replaces addopts' -m)
        kept = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-m", "unit or assay", "-rA")
        typed = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-k", "test_u")
        ini.write_text("[pytest]\nmarkers =\n    unit: fast\n", encoding="utf-8")
        by_env = pytest_run(tmp_path, dict(env, PYTEST_ADDOPTS='-k "not billing"'), "--assay-mode", "smoke")
    assert len(run_dirs(state)) == 1   # the refusals sent nothing: the one run is `kept`'s
    assert by_ini.returncode == 4, by_ini.stdout + by_ini.stderr
    assert (f"--assay .assay: 20 of 20 case(s) deselected by -m 'unit' (addopts in {ini}), not by a selection on "
            "this command line: nothing was sent to the app and no gate decided") in by_ini.stderr, by_ini.stderr
    assert '(-m "unit or assay", -k "not slow or assay")' in by_ini.stderr
    assert by_env.returncode == 4, by_env.stdout + by_env.stderr
    assert "case(s) deselected by -k 'not billing' (PYTEST_ADDOPTS)" in by_env.stderr, by_env.stderr
    assert "the gate would decide on the other" in by_env.stderr
    assert kept.returncode == 1 and "assay gate: CLOSED" in kept.stdout, kept.stdout + kept.stderr
    assert len(outcomes(kept.stdout)) == 20 and "PASSED test_unit.py::test_u" in kept.stdout
    assert typed.returncode == 0 and "assay gate: not gated (no case ran)" in typed.stdout, typed.stdout + typed.stderr
    assert "every case was deselected (by -m 'unit' (addopts in" in typed.stdout and "-k 'test_u' (command line)" \
        in typed.stdout


def test_a_typed_selection_does_not_excuse_cases_the_configuration_drops(tmp_path):
    """`addopts = -m unit` in pytest.ini and CI typing `pytest --assay .assay -k "not flaky"`: the typed -k
    switched the configuration check off, so -m unit dropped every case the -k kept, nothing was sent and the
    session read `not gated (no case ran)`, exit 0. Now a case the typed selection alone keeps that the
    configuration drops refuses the session (exit 4), with the count, both selections and the fix; one
    assay cannot evaluate (--sw: pytest's cache decides) refuses only when no case is left. A configuration
    filter that drops no case (`-m "not slow"`) beside a typed -k that selects only your own test runs it."""
    state = copy_state(tmp_path)
    (tmp_path / "test_unit.py").write_text("import pytest\n\n\n@pytest.mark.unit\ndef test_u():\n    assert True\n",
                                           encoding="utf-8")
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\nmarkers =\n    unit: fast\n    slow: slow\naddopts = -m unit --strict-markers\n",
                   encoding="utf-8")
    with helpdesk(state, broken=True) as env:
        typed_k = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-k", "not flaky")
        typed_sw = pytest_run(tmp_path, env, "--assay-mode", "smoke", "--sw")
        lastfailed = tmp_path / ".pytest_cache" / "v" / "cache" / "lastfailed"   # pytest's own cache file
        lastfailed.parent.mkdir(parents=True, exist_ok=True)
        lastfailed.write_text('{"test_unit.py::test_u": true}', encoding="utf-8")
        rerun_unit = pytest_run(tmp_path, env, "--assay-mode", "smoke", "--lf")   # --lf keeps only test_u
        lastfailed.write_text('{".assay::c-0f1bfb2c": true, "test_unit.py::test_u": true}', encoding="utf-8")
        typed_lf = pytest_run(tmp_path, env, "--assay-mode", "smoke", "--lf")
        ini.write_text("[pytest]\nmarkers =\n    unit: fast\n    slow: slow\n", encoding="utf-8")
        some = pytest_run(tmp_path, dict(env, PYTEST_ADDOPTS='-k "not billing"'), "--assay-mode", "smoke",
                          "--deselect", ".assay::c-0f1bfb2c")
        ini.write_text("[pytest]\nmarkers =\n    unit: fast\n    slow: slow\naddopts = -m \"not slow\"\n",
                       encoding="utf-8")
        control = pytest_run(tmp_path, env, "--assay-mode", "smoke", "-k", "test_u", "-rA")
    assert typed_k.returncode == 4, typed_k.stdout + typed_k.stderr
    assert ("--assay .assay: 20 of 20 case(s) that the selection typed on this command line (-k 'not flaky') "
            f"keeps were deselected by -m 'unit' (addopts in {ini}): nothing was sent to the app and no gate "
            "decided") in typed_k.stderr, typed_k.stderr
    assert '(-m "unit or assay", -k "not slow or assay")' in typed_k.stderr
    assert typed_sw.returncode == 4, typed_sw.stdout + typed_sw.stderr
    assert ("all 20 case(s) were deselected, and assay cannot tell whether by the selection typed on this command "
            "line (--sw; --sw keeps what pytest's cache says) or by -m 'unit' (addopts in") in typed_sw.stderr
    assert rerun_unit.returncode == 0 and "assay gate: not gated (no case ran)" in rerun_unit.stdout, \
        rerun_unit.stdout + rerun_unit.stderr
    assert typed_lf.returncode == 4 and ("1 of 20 case(s) that the selection typed on this command line (--lf) "
                                         "keeps were deselected by -m 'unit'") in typed_lf.stderr, typed_lf.stderr
    # -k "not billing" (PYTEST_ADDOPTS) drops the 14 billing cases of 20; the typed --deselect drops one of them
    assert some.returncode == 4, some.stdout + some.stderr
    assert ("13 of 20 case(s) that the selection typed on this command line (--deselect '.assay::c-0f1bfb2c') keeps "
            "were deselected by -k 'not billing' (PYTEST_ADDOPTS): the gate would decide on the other 6 alone"
            ) in some.stderr, some.stderr
    assert control.returncode == 0, control.stdout + control.stderr
    assert "assay gate: not gated (no case ran)" in control.stdout and "PASSED test_unit.py::test_u" in control.stdout
    assert "every case was deselected (by -m 'not slow' (addopts in" in control.stdout, control.stdout
    assert not (state / "reports").exists()   # nothing was sent by any of them


def test_setup_only_and_setup_plan_send_nothing_to_the_app(tmp_path):
    """`pytest --setup-only` / `--setup-plan` (show the fixtures; pytest runs no test) sent every case to the
    app, made a run dir and exited 1 on its gate under `no tests ran`. Now nothing is sent, as under
    --collect-only, and the session says so."""
    state = copy_state(tmp_path)
    with helpdesk(state, broken=True) as env:
        done = {flag: pytest_run(tmp_path, env, "--assay-mode", "smoke", flag)
                for flag in ("--setup-only", "--setup-plan", "--collect-only")}
    for flag, session in done.items():
        assert session.returncode == 0, flag + session.stdout + session.stderr
        assert "assay gate: CLOSED" not in session.stdout and "assay: running" not in session.stdout, session.stdout
    for flag in ("--setup-only", "--setup-plan"):
        assert "assay gate: not gated (no case ran)" in done[flag].stdout
        assert f"assay: {flag}: no test runs, so nothing was sent to the app and no gate decided" in done[flag].stdout
    assert not (state / "reports").exists()
