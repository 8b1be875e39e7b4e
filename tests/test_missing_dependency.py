"""A missing dependency makes a script exit 2 with JSON naming the install command; --help still works."""

from __future__ import annotations

import shutil

import pytest

from helpers import ROOT, run_script


def broken(tmp_path, module):
    """The package is there but does not import."""
    pkg = tmp_path / "shadow" / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f'raise ImportError("No module named {module} (simulated)")\n')
    return {"PYTHONPATH": str(tmp_path / "shadow")}


def absent(tmp_path, module):
    """The package is not there at all (a meta-path finder that finds nothing of that name)."""
    shadow = tmp_path / "absent"
    shadow.mkdir()
    (shadow / "sitecustomize.py").write_text(
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] == {module!r}:\n"
        f"            raise ModuleNotFoundError('No module named {module} (simulated)', name={module!r})\n"
        "sys.meta_path.insert(0, Hide())\n")
    return {"PYTHONPATH": str(shadow)}


@pytest.mark.parametrize("script, module, pip, args, how", [
    ("convert_suite", "yaml", "pyyaml", ["EXAMPLE"], broken),   # met where the first YAML file is read
    ("md_to_html", "markdown", "markdown", ["REPORT", "out.html"], broken),
    ("convert_suite", "yaml", "pyyaml", ["STATE"], absent),
    ("validate_cases", "jsonschema", "jsonschema", ["--cases", "x.json", "--no-capabilities"], absent),
    ("make_plan", "jsonschema", "jsonschema", ["converted.json", "--state-dir", "STATE"], absent),
])
def test_missing_dependency_is_exit_2_with_the_install_command(tmp_path, script, module, pip, args, how):
    env = how(tmp_path, module)
    if "EXAMPLE" in args:
        shutil.copytree(ROOT / "examples" / "helpdesk" / ".assay", tmp_path / ".assay",
                        ignore=shutil.ignore_patterns("work", "reports"))
    (tmp_path / "r.md").write_text("# report\n", encoding="utf-8")
    where = {"STATE": str(tmp_path), "EXAMPLE": str(tmp_path / ".assay"), "REPORT": str(tmp_path / "r.md")}
    argv = [where.get(a, a) for a in args]
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


def test_a_broken_jsonschema_is_named_where_it_is_first_needed(tmp_path):
    """jsonschema is imported only to word the errors of an invalid document (a valid one is checked
    without it): installed but broken, it is exit 2 with the install command there, never a traceback."""
    env = broken(tmp_path, "jsonschema")
    state = tmp_path / ".assay"
    (state / "datasets").mkdir(parents=True)
    (state / "adapter.yaml").write_text("adapter_version: 1\nnot_a_key: 3\n", encoding="utf-8")
    shutil.copy(ROOT / "examples" / "helpdesk" / ".assay" / "profile.yaml", state / "profile.yaml")
    r = run_script("convert_suite", str(state), env=env, cwd=tmp_path)
    assert r.rc == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.json["missing"] == ["jsonschema"] and r.json["fix"] == "pip install jsonschema"
