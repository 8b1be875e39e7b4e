"""Dependencies with no manual step (core/bootstrap.py, hooks/session_start.py).

Proved from a Python that has none of PyYAML, jsonschema, Markdown: a bare venv
made without pip. The first script call prepares the environment (from the package
index, as a user's machine would) and re-enters it; the second reuses it; a
broken index is a clear exit 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, SCRIPTS

from assay.core import bootstrap

pytestmark = pytest.mark.slow


def _pyproject_dependencies() -> list[str]:
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    return [line.strip().strip(",").strip('"') for line in block.splitlines() if line.strip()]


def test_one_list_of_requirements():
    assert tuple(_pyproject_dependencies()) == bootstrap.RUNTIME_REQUIREMENTS
    text = (ROOT / "pyproject.toml").read_text()   # the optional ones: the `fast` extra
    fast = text.split("\nfast = [", 1)[1].split("]", 1)[0]
    assert tuple(x.strip().strip('"') for x in fast.split(",") if x.strip()) == bootstrap.OPTIONAL_REQUIREMENTS


def test_venv_dir_resolution_order(tmp_path):
    key = bootstrap.requirements_key()
    assert bootstrap.venv_dir({"ASSAY_VENV": str(tmp_path / "v"), "CLAUDE_PLUGIN_DATA": "/x"}) == tmp_path / "v"
    assert bootstrap.venv_dir({"CLAUDE_PLUGIN_DATA": str(tmp_path)}) == tmp_path / f"venv-{key}"
    assert bootstrap.venv_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "assay" / f"venv-{key}"
    assert bootstrap.venv_dir({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "assay" / f"venv-{key}"


def test_key_changes_with_the_python_minor_version():
    assert bootstrap.requirements_key((3, 11)) != bootstrap.requirements_key((3, 12))
    assert bootstrap.python_too_old((3, 9)) and not bootstrap.python_too_old((3, 11))


def test_the_build_uses_the_bundled_pip_wheel_and_falls_back_to_ensurepip(monkeypatch, tmp_path):
    """With the interpreter's bundled pip wheel: a venv without pip, then one pip run from that wheel
    (pip itself and the requirements, nothing byte-compiled). Without it (a distribution that strips
    ensurepip's wheels): `python -m venv`, then the venv's own pip. The full build is proved below."""
    calls = []
    monkeypatch.setattr(bootstrap, "_run", lambda argv, what: calls.append(argv))
    wheel = tmp_path / "pip-99.0-py3-none-any.whl"
    monkeypatch.setattr(bootstrap, "bundled_pip_wheel", lambda: wheel)
    bootstrap._build(tmp_path / "v")
    py = str(bootstrap.venv_python(tmp_path / "v"))
    assert calls[0] == [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")]
    assert calls[1][:3] == [py, str(wheel / "pip"), "install"] and "--no-compile" in calls[1]
    wanted = ["--only-binary=msgspec", *bootstrap.RUNTIME_REQUIREMENTS, *bootstrap.OPTIONAL_REQUIREMENTS]
    assert calls[1][-6:] == [str(wheel), *wanted] and len(calls) == 2
    calls.clear()
    monkeypatch.setattr(bootstrap, "bundled_pip_wheel", lambda: None)
    bootstrap._build(tmp_path / "v")
    assert calls[0] == [sys.executable, "-m", "venv", str(tmp_path / "v")]
    assert calls[1][:4] == [py, "-m", "pip", "install"] and calls[1][-5:] == wanted and len(calls) == 2


def test_an_optional_requirement_with_no_wheel_is_left_out_and_nothing_else_is(monkeypatch, tmp_path):
    """msgspec (the `fast` extra) is installed with the requirements when a built wheel of it is there; when
    pip names it (no wheel for this platform or Python), the environment is built without it, in one more
    pip run; any other failure (no package index) is the error it always was, without a second run."""
    calls = []

    def pip(argv, what, fails=None):
        calls.append(argv)
        if "msgspec>=0.18" in argv and fails:
            raise bootstrap.BootstrapError(fails, "fix")
    monkeypatch.setattr(bootstrap, "bundled_pip_wheel", lambda: None)
    monkeypatch.setattr(bootstrap, "_run", lambda argv, what: pip(argv, what, "installing failed (exit 1): ERROR: "
                        "Could not find a version that satisfies the requirement msgspec>=0.18 (from versions: none)"))
    bootstrap._build(tmp_path / "v")
    assert len(calls) == 3 and calls[2][-3:] == list(bootstrap.RUNTIME_REQUIREMENTS) and "msgspec>=0.18" not in calls[2]
    calls.clear()
    monkeypatch.setattr(bootstrap, "_run", lambda argv, what: pip(argv, what, "installing failed (exit 1): ERROR: "
                        "No matching distribution found for PyYAML>=6.0"))
    with pytest.raises(bootstrap.BootstrapError, match="PyYAML"):
        bootstrap._build(tmp_path / "v")
    assert len(calls) == 2   # the venv, one pip run: no second try for a failure that is not msgspec's


def test_this_python_has_a_bundled_pip_wheel_or_says_none():
    wheel = bootstrap.bundled_pip_wheel()
    assert wheel is None or (wheel.is_file() and wheel.name.startswith("pip-") and wheel.suffix == ".whl")


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A Python with none of the three packages (a venv without pip or site packages)."""
    d = tmp_path_factory.mktemp("bare")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d / "py")], check=True)
    py = d / "py" / "bin" / "python"
    probe = subprocess.run([str(py), "-c", "import yaml"], capture_output=True)
    assert probe.returncode != 0, "the bare Python must not have PyYAML"
    return py


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("ASSAY_NO_BOOTSTRAP", "PYTHONPATH", "ASSAY_BOOTSTRAPPED",
                                                             "VIRTUAL_ENV", "CLAUDE_PLUGIN_DATA", "ASSAY_VENV")}
    # the venvs these tests build would have pip byte-compile every package into the suite's
    # shared bytecode cache (tests/conftest.py), seconds of CPU per venv for nothing they check
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Where the first bootstrap builds; later tests reuse whatever it left ready."""
    return tmp_path_factory.mktemp("prepared") / "assay-venv"


def test_a_python_without_the_packages_runs_every_step_after_one_bootstrap(bare_python, prepared, tmp_path):
    venv = prepared
    md = tmp_path / "r.md"
    md.write_text("# hello\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    env = _env(ASSAY_VENV=str(venv))
    first = subprocess.run([str(bare_python), str(SCRIPTS / "md_to_html.py"), str(md), str(tmp_path / "r.html")],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    if first.returncode != 0 and "package index" in first.stdout + first.stderr and "network" in first.stdout:
        pytest.skip(f"no package index reachable: {first.stdout}")
    assert first.returncode == 0, (first.stdout, first.stderr)
    assert "preparing its Python packages" in first.stderr
    assert json.loads(first.stdout)["html"].endswith("r.html")
    assert "<table>" in (tmp_path / "r.html").read_text()
    assert bootstrap.is_ready(venv)
    fast = subprocess.run([str(bootstrap.venv_python(venv)), "-c", "import msgspec"], capture_output=True)
    assert fast.returncode == 0, fast.stderr   # the `fast` extra came with it (its wheel is on the index)
    # a second script, a second call: the same environment, no second install
    second = subprocess.run([str(bare_python), str(SCRIPTS / "convert_suite.py"), str(ROOT / "examples" / "helpdesk" / ".assay"),
                             "-o", str(tmp_path / "c.json")], capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, (second.stdout, second.stderr)
    assert "preparing" not in second.stderr
    assert json.loads(second.stdout)["cases"] > 0


def test_no_package_index_is_a_clear_exit_2(bare_python, tmp_path):
    env = _env(ASSAY_VENV=str(tmp_path / "v"), PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_NO_INDEX="",
               PIP_FIND_LINKS="", PIP_RETRIES="0", PIP_TIMEOUT="2", PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")
    r = subprocess.run([str(bare_python), str(SCRIPTS / "make_plan.py"), "x.json", "--state-dir", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    out = json.loads(r.stdout)
    assert out["missing"] == ["jsonschema"]
    assert "installing" in out["bootstrap"] and "fix:" in out["bootstrap"]
    assert not bootstrap.is_ready(tmp_path / "v")
    assert not (tmp_path / "v").exists(), "a failed build leaves nothing half-made in place"


def test_opt_out_names_the_pip_command(bare_python, tmp_path):
    r = subprocess.run([str(bare_python), str(SCRIPTS / "md_to_html.py"), "a.md", "b.html"], capture_output=True,
                       text=True, env=_env(ASSAY_NO_BOOTSTRAP="1", ASSAY_VENV=str(tmp_path / "v")), timeout=60)
    assert r.returncode == 2
    out = json.loads(r.stdout)
    assert out["fix"] == "pip install markdown" and "ASSAY_NO_BOOTSTRAP" in out["bootstrap"]


def test_session_start_hook_exports_the_environment(bare_python, prepared, tmp_path):
    """The hook, run by the bare Python as Claude Code runs it (JSON on stdin, CLAUDE_ENV_FILE set)."""
    env_file = tmp_path / "session-env.sh"
    data = tmp_path / "plugin-data"
    key = bootstrap.requirements_key()
    # the environment the first test built stands in for an earlier session's (the hook reuses a ready one)
    where = data / f"venv-{key}"
    where.parent.mkdir(parents=True)
    env = _env(CLAUDE_PLUGIN_DATA=str(data), CLAUDE_ENV_FILE=str(env_file), CLAUDE_PLUGIN_ROOT=str(ROOT))
    if bootstrap.is_ready(prepared):
        os.symlink(prepared, where)
    r = subprocess.run([str(bare_python), str(ROOT / "hooks" / "session_start.py")], input="{}", capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"ready in {where}" in r.stdout
    assert env_file.read_text() == f"export ASSAY_VENV='{where}'\n"
    # a Python that already has everything: nothing to build, nothing exported
    env_file.unlink()
    r2 = subprocess.run([sys.executable, str(ROOT / "hooks" / "session_start.py")], input="{}", capture_output=True,
                        text=True, env=env, timeout=60)
    assert r2.returncode == 0 and "present" in r2.stdout and not env_file.exists()


def test_hook_builds_nothing_when_the_person_opted_out(bare_python, tmp_path):
    # README: `ASSAY_NO_BOOTSTRAP=1` turns the mechanism off. The hook went on building a venv from the
    # package index (up to its 300 s timeout) at every session start all the same
    data = tmp_path / "plugin-data"
    env_file = tmp_path / "session-env.sh"
    env = _env(ASSAY_NO_BOOTSTRAP="1", CLAUDE_PLUGIN_DATA=str(data), CLAUDE_ENV_FILE=str(env_file),
               PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_TIMEOUT="2")
    r = subprocess.run([str(bare_python), str(ROOT / "hooks" / "session_start.py")], input="{}", capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ASSAY_NO_BOOTSTRAP is set" in r.stdout and "Fix: pip install 'PyYAML" in r.stdout, r.stdout
    assert "preparing" not in r.stdout
    assert not data.exists() and not env_file.exists()


def test_hook_never_fails_the_session(bare_python, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    env = _env(CLAUDE_PLUGIN_DATA=str(blocker))
    r = subprocess.run([str(bare_python), str(ROOT / "hooks" / "session_start.py")], input="{}", capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0
    assert "assay: could not prepare its Python packages" in r.stdout


def _readme_by_hand_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Using it on your own app", 1)[1]
    block = section.split("```", 2)[1]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip().startswith("python3 ")]


def test_readme_by_hand_path_works_as_written_with_a_bare_python3(bare_python, prepared, tmp_path):
    """README "Using it on your own app", step 2, typed literally on a machine whose python3 has no packages."""
    import importlib.util
    import shutil

    commands = _readme_by_hand_commands()
    scripts = [c.split()[1].strip('"').replace("$ASSAY_ROOT/", "") for c in commands]
    assert scripts[:3] == ["scripts/convert_suite.py", "scripts/validate_cases.py", "scripts/make_plan.py"]
    run_id = "smoke-20261206T000000Z"   # the block's RUN_ID (it names the run for make_plan.py and the rest)
    spec = importlib.util.spec_from_file_location("helpdesk_demo", ROOT / "examples" / "helpdesk" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    state = tmp_path / "app" / ".assay"
    shutil.copytree(ROOT / "examples" / "helpdesk" / ".assay", state,
                    ignore=shutil.ignore_patterns("work", "reports", "holdout-looks.jsonl"))
    shim = tmp_path / "bin" / "python3"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{bare_python}" "$@"\n')
    shim.chmod(0o755)
    app = demo.App(tmp_path, broken=False, flaky=False)
    url = app.start()
    try:
        env = _env(ASSAY_VENV=str(prepared), PATH=f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
                   HELPDESK_BASE_URL=url, HELPDESK_OTLP_FILE=str(app.otlp_file),
                   S=str(state), W=str(state / "work"), ASSAY_ROOT=str(ROOT), RUN_ID=run_id)
        for command, script in zip(commands, scripts):
            r = subprocess.run(["sh", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)
            gate = script == "scripts/gate.py"
            assert r.returncode == 0 or (gate and r.returncode == 1), (command, r.stdout[-1500:], r.stderr[-1500:])
            assert "Traceback" not in r.stderr, (command, r.stderr[-1500:])
        assert json.loads((state / "work" / "plan.json").read_text())["run_id"] == run_id
        assert (state / "reports" / run_id / "report.html").is_file()
    finally:
        app.stop()
