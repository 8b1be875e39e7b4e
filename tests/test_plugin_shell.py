"""The plugin shell: manifests agree, one version string everywhere."""

import json
import re

import pytest

from helpers import ROOT, SCRIPTS, run_script

from assay.core.version import VERSION


def test_one_plugin_manifest_in_two_documented_places():
    a = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert a["name"] == "assay"
    assert a["version"] == VERSION
    # the design card lists a top-level plugin.json; Claude Code reads .claude-plugin/plugin.json:
    # one manifest, byte for byte the same in both places
    top = (ROOT / "plugin.json").read_bytes()
    assert top == (ROOT / ".claude-plugin" / "plugin.json").read_bytes(), \
        "plugin.json and .claude-plugin/plugin.json differ: copy .claude-plugin/plugin.json over plugin.json"


def test_marketplace_names_the_plugin_with_the_same_description():
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    m = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert [p["name"] for p in m["plugins"]] == ["assay"]
    assert m["plugins"][0]["description"] == plugin["description"]
    assert m["description"] == plugin["description"]


def test_icon_is_a_square_png_in_the_size_the_directory_accepts():
    import struct
    data = (ROOT / ".claude-plugin" / "icon.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == height and 512 <= width <= 2048
    assert len(data) < 2 * 1024 * 1024


def test_every_script_prints_version_and_help():
    scripts = sorted(p.stem for p in SCRIPTS.glob("*.py"))
    assert scripts, "no scripts found"
    for name in scripts:
        r = run_script(name, "--version")
        assert r.rc == 0, (name, r.stdout, r.stderr)
        assert r.stdout.strip() == f"assay {VERSION}", name
        h = run_script(name, "--help")
        assert h.rc == 0, (name, h.stderr)
        assert "example" in h.stdout.lower(), f"{name} --help shows no worked example"


def test_pyproject_reads_the_same_version():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'version = \{attr = "assay.core.version.VERSION"\}', text)


def test_readme_shows_both_commands_and_its_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert links
    for link in links:
        if "://" in link:
            continue
        assert (ROOT / link).exists(), f"README links to a missing file: {link}"


def test_readme_pipeline_scripts_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in re.findall(r"scripts/([a-z_]+\.py)", text):
        assert (SCRIPTS / name).exists(), name


def test_no_tracked_file_is_one_git_ignores():
    """Run dirs and work files of the examples are ignored; a run committed by accident would ship
    in the plugin (with this machine's paths in its manifest)."""
    import shutil
    import subprocess
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "ls-files", "-ci", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [], r.stdout[:500]
