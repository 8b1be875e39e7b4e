"""Packaging: `pip install <checkout>` into a fresh venv gives the `assay` console entry, the
Python API and the pytest plugin with the three runtime dependencies only, and they work
there (the commands ship in the wheel: `assay --help` lists them, `pytest --assay` plans,
runs and gates the example app). Plus the console's command list and dispatch, in the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpdesk_util import copy_state, helpdesk
from helpers import ROOT, SCRIPTS

sys.path.insert(0, str(SCRIPTS))
from assay import console  # noqa: E402
from assay.core import commands  # noqa: E402

RUNTIME = {"pyyaml", "jsonschema", "markdown"}


def test_the_commands_are_the_scripts_that_exist():
    assert commands.SCRIPTS_DIR == SCRIPTS
    assert commands.command_names() == sorted(p.stem for p in SCRIPTS.glob("*.py"))
    for alias, target in console.ALIASES.items():
        assert target in commands.command_names(), alias
    assert console.resolve("run") == "run_cases" and console.resolve("gate") == "gate"
    assert console.resolve("run-history") == "run_history" and console.resolve("convert") == "convert_suite"
    assert console.resolve("nope") is None


def test_assay_run_is_run_cases(tmp_path):
    """The console entry runs a script exactly as python3 scripts/<name>.py does (same JSON, same exit)."""
    via_console = subprocess.run([sys.executable, "-c", "import sys; from assay.console import main; "
                                  "sys.exit(main())", "run", "--verify", str(tmp_path)],
                                 capture_output=True, text=True, cwd=SCRIPTS, timeout=60)
    direct = subprocess.run([sys.executable, str(SCRIPTS / "run_cases.py"), "--verify", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert via_console.returncode == direct.returncode == 2
    assert json.loads(via_console.stdout) == json.loads(direct.stdout)
    unknown = subprocess.run([sys.executable, "-c", "import sys; from assay.console import main; sys.exit(main())",
                              "gaet"], capture_output=True, text=True, cwd=SCRIPTS, timeout=60)
    assert unknown.returncode == 2 and "no command 'gaet' (did you mean gate?)" in json.loads(unknown.stdout)["error"]
    # the API's word (api.plan) and another case name the command meant (before: no hint at all)
    for word, meant in (("plan", "(did you mean make-plan?)"), ("Gate", "(did you mean gate?)")):
        wrong = subprocess.run([sys.executable, "-c", "import sys; from assay.console import main; sys.exit(main())",
                                word], capture_output=True, text=True, cwd=SCRIPTS, timeout=60)
        assert wrong.returncode == 2 and f"no command {word!r} {meant}" in json.loads(wrong.stdout)["error"], wrong.stdout


def tracked_copy(dest: Path) -> Path:
    """The checkout as git has it (no venv, no build dir, no run dirs): what `pip install <checkout>` sees."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


@pytest.mark.slow
def test_a_fresh_venv_with_only_the_package(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is needed to copy the checkout")
    checkout = tracked_copy(tmp_path / "checkout")
    env_dir = tmp_path / "venv"
    # a venv without pip of its own, filled by this interpreter's pip (`pip --python`): the same
    # install, minus ~7 CPU-s of ensurepip byte-compiling pip and setuptools into it for nothing
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=300)
    py = env_dir / "bin" / "python"
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet",
                          "--disable-pip-version-check", "--no-compile", str(checkout), "pytest"],
                         capture_output=True, text=True, timeout=540, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert pip.returncode == 0, pip.stdout + pip.stderr
    requires = subprocess.run([str(py), "-c", "import importlib.metadata as m, json; "
                               "print(json.dumps(m.requires('assay')))"], capture_output=True, text=True)
    names = {r.split(">")[0].split("=")[0].split("[")[0].split(";")[0].strip().lower()
             for r in json.loads(requires.stdout) if "extra ==" not in r}
    assert names == RUNTIME

    helped = subprocess.run([str(env_dir / "bin" / "assay"), "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0, helped.stderr
    for name in commands.command_names():  # every script of the checkout, shipped in the wheel
        assert f"  {name.replace('_', '-')}" in helped.stdout
    assert "site-packages/assay/_commands" in helped.stdout

    work = tmp_path / "app"
    work.mkdir()
    state = copy_state(work)
    with helpdesk(state) as env:
        env.pop("VIRTUAL_ENV", None)
        env["PATH"] = f"{env_dir / 'bin'}:{env.get('PATH', '')}"
        done = subprocess.run([str(py), "-m", "pytest", "--assay", ".assay", "--assay-mode", "smoke"], cwd=work,
                              env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20 passed" in done.stdout and "assay gate: open" in done.stdout
    assert "completeness check" not in done.stdout and "not verified" not in done.stdout  # re-checked, clean
