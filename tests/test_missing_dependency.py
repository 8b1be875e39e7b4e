"""A missing dependency makes a script exit 2 with JSON naming the install command; --help still works."""

from __future__ import annotations

import pytest

from helpers import run_script


def broken(tmp_path, module):
    pkg = tmp_path / "shadow" / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f'raise ImportError("No module named {module} (simulated)")\n')
    return {"PYTHONPATH": str(tmp_path / "shadow")}


@pytest.mark.parametrize("script, module, pip, args", [
    ("convert_suite", "yaml", "pyyaml", ["STATE"]),
    ("validate_cases", "jsonschema", "jsonschema", ["--cases", "x.json", "--no-capabilities"]),
    ("make_plan", "jsonschema", "jsonschema", ["converted.json", "--state-dir", "STATE"]),
])
def test_missing_dependency_is_exit_2_with_the_install_command(tmp_path, script, module, pip, args):
    env = broken(tmp_path, module)
    argv = [str(tmp_path) if a == "STATE" else a for a in args]
    r = run_script(script, *argv, env=env, cwd=tmp_path)
    assert r.rc == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    out = r.json
    assert out["missing"] == [module]
    assert out["fix"] == f"pip install {pip}"
    assert f"pip install {pip}" in out["error"] and f"uv run --with {pip}" in out["error"]
    # --help and --version need nothing beyond the standard library
    assert run_script(script, "--help", env=env).rc == 0
    assert run_script(script, "--version", env=env).stdout.startswith("assay ")
