"""A new user's mistakes with paths, round 63: the example helpdesk's state dir with one real run
(examples/helpdesk/demo.py against the app on its own port), every command driven as a subprocess.
Each mistake used to lose the user's input, crash with a traceback or plan into the wrong place;
each now exits 2 naming the path and the one to pass.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpdesk_util import HELPDESK, copy_state
from helpers import run_script

pytestmark = pytest.mark.slow   # one demo run (~7 s) shared by the file


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, Path]:
    """(state dir, its one run dir): the helpdesk demo's smoke run, converted suite in work/."""
    state = copy_state(tmp_path_factory.mktemp("helpdesk round63"))   # a space in the path, as a user's may have
    r = subprocess.run([sys.executable, str(HELPDESK / "demo.py"), "--state-dir", str(state)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (run,) = [p for p in (state / "reports").iterdir() if p.is_dir()]
    return state, run


def test_convert_suite_never_writes_its_json_over_a_case_it_reads(recorded, tmp_path):
    """`-o .assay/datasets/<case>.yaml` (the output typed beside the cases): the case was replaced by
    the converted JSON, exit 0, and the case's YAML was gone."""
    state, _ = recorded
    case = sorted((state / "datasets").glob("c-*.yaml"))[0]
    before = case.read_bytes()
    r = run_script("convert_suite", state, "-o", case)
    assert r.rc == 2, r.stdout
    assert r.json["key"] == "-o" and r.json["file"] == f"datasets/{case.name}"
    assert "a file the suite is read from" in r.json["error"] and "<state>/work/converted.json" in r.json["error"]
    assert case.read_bytes() == before
    r = run_script("convert_suite", state, "--split-dir", state / "datasets", "-o", tmp_path / "c.json")
    assert r.rc == 0, r.stdout   # suite.json & co beside the cases replace none of them


def test_a_run_or_reports_dir_given_for_the_state_dir_names_the_state_dir(recorded, tmp_path):
    """make_plan.py --state-dir <run dir> printed a plan (exit 0, a warning) whose reports and holdout
    ledger went under the run dir; convert_suite.py said only "adapter.yaml is missing", gate.py
    --state-dir only "no profile.yaml there"."""
    state, run = recorded
    converted = state / "work" / "converted.json"
    for wrong, instead in ((run, f"pass its state dir, {state}"), (state / "reports", f"pass its parent, {state}")):
        r = run_script("make_plan", converted, "--state-dir", wrong, "--mode", "smoke", "-o", tmp_path / "plan.json")
        assert r.rc == 2, r.stdout
        assert r.json["key"] == "--state-dir" and instead in r.json["error"], r.json
        assert not (tmp_path / "plan.json").exists() and not (run / "reports").exists()
        r = run_script("convert_suite", wrong)
        assert r.rc == 2 and instead in r.json["error"], r.stdout
        r = run_script("gate", run, "--state-dir", wrong, "--json")
        assert r.rc == 2 and r.json["key"] == "--state-dir" and instead in r.json["error"], r.stdout


def test_md_to_html_never_renders_over_its_own_input(recorded, tmp_path):
    """`md_to_html.py report.md report.md` (the output path copied from the input): the Markdown the
    user wrote was replaced by HTML, exit 0. A directory for the output names the file to pass."""
    _, run = recorded
    md = run / "report.md"
    before = md.read_bytes()
    r = run_script("md_to_html", md, md, cwd=run)
    assert r.rc == 2, r.stdout
    assert "that is the input Markdown" in r.json["error"] and str(md.with_suffix(".html")) in r.json["error"]
    assert md.read_bytes() == before
    r = run_script("md_to_html", md, tmp_path)
    assert r.rc == 2 and f"a directory; pass the HTML file to write, e.g. {tmp_path / 'report.html'}" in r.json["error"]


def test_md_to_html_reads_a_report_saved_with_a_byte_order_mark(tmp_path):
    """A report.md saved by an editor that writes UTF-8 with a BOM (and CRLF): its title became a
    paragraph showing the mark, the page titled by the file name."""
    md = tmp_path / "notes.md"
    md.write_bytes("\ufeff# Refund regressions\r\n\r\nSee *below*.\r\n".encode("utf-8"))
    r = run_script("md_to_html", md, tmp_path / "notes.html")
    assert r.rc == 0, r.stdout
    page = (tmp_path / "notes.html").read_text(encoding="utf-8")
    assert "<h1>Refund regressions</h1>" in page and "<title>Refund regressions</title>" in page
    assert "\ufeff" not in page and "U+FEFF" not in page


def test_view_bundle_never_crashes_on_a_file_nor_writes_over_a_users_directory(recorded, tmp_path):
    """`--bundle notes.txt` ended in a FileExistsError traceback (exit 1); `--bundle site` (a directory
    of the user's own pages) had its index.html replaced. A new dir, and the same one again, are written."""
    state, _ = recorded
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n", encoding="utf-8")
    r = run_script("view", state, "--bundle", notes)
    assert r.rc == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "a file; the bundle is a directory" in r.json["error"] and notes.read_text() == "mine\n"
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>mine</h1>", encoding="utf-8")
    r = run_script("view", state, "--bundle", site)
    assert r.rc == 2 and "holds other files and no earlier bundle" in r.json["error"], r.stdout
    assert (site / "index.html").read_text() == "<h1>mine</h1>"
    for _ in range(2):
        r = run_script("view", state, "--bundle", tmp_path / "bundle")
        assert r.rc == 0 and r.json["runs"] == 1, r.stdout
    shutil.rmtree(tmp_path / "bundle")


def test_import_promptfoo_given_the_config_directory_says_it_is_a_directory(tmp_path):
    """`import_promptfoo.py my-evals/` (the directory, not promptfooconfig.yaml in it) was answered
    "is not a regular file (a device, FIFO or socket)"."""
    evals = tmp_path / "my evals"
    evals.mkdir()
    r = run_script("import_promptfoo", evals, "--state-dir", tmp_path / ".assay")
    assert r.rc == 2, r.stdout
    assert "is a directory, not a file" in r.json["error"] and "promptfooconfig.yaml" in r.json["error"], r.stdout
