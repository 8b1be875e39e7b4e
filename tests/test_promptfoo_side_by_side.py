"""Side by side on the same app: promptfoo (pinned, from npm) and assay on one promptfoo config.

The example helpdesk app runs on a free port; promptfoo evaluates a config against it, the
same config is imported with import_promptfoo.py and run through convert_suite, make_plan
and run_cases against the same app. For every case, assay's verdict must equal promptfoo's
verdict over the assertions both evaluate (the ones the import converted exactly: here
every one but a `javascript` check, which promptfoo alone runs). The config is built so
that some cases pass and some fail, so agreement is not vacuous.

promptfoo is installed once into `<repo>/.venv/promptfoo` (git-ignored; `npm install
--prefix`, the version pinned in bench/promptfoo.py). The test skips, saying why, when Node
>= 20 or npm is missing or the install fails. Marked slow: an install takes about a minute
the first time, an eval about ten seconds.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, run_script
from test_example_app import RunningApp

pytestmark = pytest.mark.slow
PREFIX = ROOT / ".venv" / "promptfoo"
BIN = PREFIX / "node_modules" / ".bin" / "promptfoo"


def pinned_version() -> str:
    text = (ROOT / "bench" / "promptfoo.py").read_text(encoding="utf-8")
    return re.search(r'^PROMPTFOO_VERSION = "([^"]+)"', text, re.M).group(1)


def promptfoo() -> tuple[Path | None, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        return None, "Node.js or npm not found on PATH: promptfoo side-by-side skipped"
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    m = re.match(r"v(\d+)", out)
    if not m or int(m.group(1)) < 20:
        return None, f"promptfoo {pinned_version()} needs Node >= 20, found {out or 'none'}: side-by-side skipped"
    version = pinned_version()
    PREFIX.mkdir(parents=True, exist_ok=True)
    with open(PREFIX / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # parallel workers install once
        installed = PREFIX / "node_modules" / "promptfoo" / "package.json"
        if not (installed.is_file() and json.loads(installed.read_text()).get("version") == version):
            proc = subprocess.run([npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund",
                                   f"promptfoo@{version}"], capture_output=True, text=True, timeout=900)
            if proc.returncode != 0 or not BIN.exists():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
                return None, f"npm could not install promptfoo@{version}: {' / '.join(tail)}; side-by-side skipped"
    return BIN, ""


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
                "PROMPTFOO_DISABLE_SHARING": "1", "PROMPTFOO_CONFIG_DIR": str(tmp / "pfcfg"),
                "PROMPTFOO_CACHE_ENABLED": "false", "NO_COLOR": "1"})
    return env


INVOICE = "What is the total of invoice INV-1001?"
VPN = "My VPN keeps disconnecting"
PASSWORD = "I forgot my password"


def config(url: str, invoice_answer: str) -> dict:
    def t(desc, question, *asserts):
        return {"description": desc, "vars": {"question": question}, "assert": list(asserts)}
    return {
        "description": "side by side",
        "prompts": ["{{question}}"],
        "providers": [{"id": "https", "config": {
            "url": f"{url}/api/chat", "method": "POST", "headers": {"Content-Type": "application/json"},
            "body": {"message": "{{prompt}}", "session_id": "side-by-side"}, "transformResponse": "json.answer"}}],
        "defaultTest": {"assert": [{"type": "not-icontains", "value": "as an ai"}]},
        "tests": [
            t("contains pass", INVOICE, {"type": "contains", "value": "120.00 USD"}),
            t("contains fail", INVOICE, {"type": "contains", "value": "121.00 USD"}),
            t("icontains", VPN, {"type": "icontains", "value": "ikev2"}),
            t("contains-any", VPN, {"type": "contains-any", "value": ["Reboot", "Reinstall"]}),
            t("contains-all fail", VPN, {"type": "contains-all", "value": ["Reinstall", "router"]}),
            t("not-contains", PASSWORD, {"type": "not-contains", "value": "error"}),
            t("starts-with", INVOICE, {"type": "starts-with", "value": "Invoice INV-1001"}),
            t("starts-with fail", VPN, {"type": "starts-with", "value": "Hello"}),
            t("starts-with mid-text fail", VPN, {"type": "starts-with", "value": "Reinstall"}),
            t("regex", INVOICE, {"type": "regex", "value": r"due \d{4}-\d{2}-\d{2}\."}),
            t("equals", INVOICE, {"type": "equals", "value": invoice_answer}),
            t("equals fail", VPN, {"type": "equals", "value": "VPN keeps disconnecting"}),
            t("equals substring fail", INVOICE, {"type": "equals", "value": "INV-1001"}),
            t("not-contains-all fail", PASSWORD, {"type": "not-contains-all", "value": ["reset", "link"]}),
            t("not-icontains-any", PASSWORD, {"type": "not-icontains-any", "value": ["sorry", "cannot"]}),
            t("icontains-all", VPN, {"type": "icontains-all", "value": ["vpn", "PROFILE"]}),
            t("javascript only promptfoo", INVOICE, {"type": "contains", "value": "INV-1001"},
              {"type": "javascript", "value": "output.length > 5"}),
        ],
    }


def test_assay_agrees_with_promptfoo_case_by_case(tmp_path):
    binary, why = promptfoo()
    if binary is None:
        pytest.skip(why)
    app = RunningApp(tmp_path)
    try:
        _status, body, _ = app.chat(INVOICE)
        cfg_path = tmp_path / "promptfooconfig.yaml"
        cfg_path.write_text(yaml.safe_dump(config(app.url, body["answer"]), sort_keys=False))
        out_json = tmp_path / "pf.json"
        proc = subprocess.run([str(binary), "eval", "-c", str(cfg_path), "-o", str(out_json), "--no-cache",
                               "--no-table", "--no-progress-bar", "-j", "4"], cwd=tmp_path, env=_env(tmp_path),
                              capture_output=True, text=True, timeout=300)
        assert out_json.is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
        pf = json.loads(out_json.read_text())["results"]["results"]

        state = tmp_path / "s"
        imp = run_script("import_promptfoo", cfg_path, "--state-dir", state)
        assert imp.rc == 0, imp.stdout
        # the javascript case keeps its contains check and carries the javascript one in not_converted,
        # which make_plan refuses (check_not_converted); the person drops it, as docs/importing.md says
        for f in (state / "datasets" / "promptfoo").glob("*.yaml"):
            case = yaml.safe_load(f.read_text())
            if case.pop("not_converted", None):
                assert case["title"] == "javascript only promptfoo", case
                f.write_text(yaml.safe_dump(case, sort_keys=False))
        work = state / "work"
        assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
        plan = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                          "-o", work / "plan.json")
        assert plan.rc == 0, plan.stdout
        run_dir = state / "reports" / plan.json["run_id"]
        run = run_script("run_cases", "--plan", work / "plan.json", "--out", run_dir, timeout=300)
        assert run.rc == 0, run.stdout + run.stderr
    finally:
        app.stop()

    record = json.loads((state / "import.json").read_text())
    exact = {(m["case"], m["type"]) for m in record["mapped"] if m["exact"]}
    titles = {}
    for f in (state / "datasets" / "promptfoo").glob("*.yaml"):
        case = yaml.safe_load(f.read_text())
        titles[case["title"]] = case["id"]
    assay = {json.loads(line)["case_id"]: json.loads(line)["verdict"]
             for line in (run_dir / "verdicts.jsonl").read_text().splitlines() if line.strip()}
    compared = []
    for result in pf:
        desc = result["testCase"]["description"]
        cid = titles[desc]
        parts = [c for c in result["gradingResult"]["componentResults"]
                 if (cid, c["assertion"]["type"]) in exact]
        assert parts, desc
        promptfoo_verdict = "pass" if all(c["pass"] for c in parts) else "fail"
        compared.append((desc, promptfoo_verdict, assay[cid]))
    disagree = [c for c in compared if c[1] != c[2]]
    assert not disagree, disagree
    assert len(compared) == 17
    assert {v for _, v, _ in compared} == {"pass", "fail"}
    # the javascript check is promptfoo's alone, and listed as not converted
    assert any(s["what"] == "javascript" for s in imp.json["not_converted"])
