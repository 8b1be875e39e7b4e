"""The six workflow skills' text is held to the scripts: front matter by Claude Code's rules,
allowed-tools naming exactly the scripts each skill calls, every script and flag it names
existing (the script's own --help lists the flag), the shared hard rules present, and no
instruction to count or compute what a script prints."""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache

import pytest
from helpers import ROOT, SCRIPTS
from test_skill_frontmatter import front_matter

SIX = ("start", "discover", "generate", "analyze", "optimize", "help")
SCRIPT_NAMES = {p.stem for p in SCRIPTS.glob("*.py")}
PLUGIN_SCRIPT_RE = re.compile(r"\$\{CLAUDE_PLUGIN_ROOT\}/scripts/([a-z_]+)\.py")
BARE_SCRIPT_RE = re.compile(r"(?<![\w/.-])([a-z_]+)\.py\b")
ALLOWED_SCRIPT_RE = re.compile(r'Bash\(python3 "?\$\{CLAUDE_PLUGIN_ROOT\}/scripts/([a-z_]+)\.py"? \*\)')
FLAG_RE = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
COUNT_VERB_RE = re.compile(r"\b(count|compute|calculate|tally|add up|sum up|work out)\b", re.I)
EXCUSED_RE = re.compile(r"\b(never|not|no|don't|do not|nobody|without)\b|script|\.py|prints|counts? (is|are)", re.I)


def skill(name: str) -> tuple[dict, str]:
    text = (ROOT / "skills" / name / "SKILL.md").read_text(encoding="utf-8")
    meta = front_matter(text, f"skills/{name}/SKILL.md")
    return meta, text.split("\n---\n", 1)[1]


@lru_cache(maxsize=None)
def script_help(name: str) -> str:
    spec = importlib.util.spec_from_file_location(f"_skilltext_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_parser().format_help()


def named_scripts(body: str) -> set[str]:
    found = set(PLUGIN_SCRIPT_RE.findall(body))
    found |= {s for s in BARE_SCRIPT_RE.findall(body) if s in SCRIPT_NAMES}
    return found


def script_commands(body: str):
    """(script, the rest of its command) for every script mention, up to a backtick or line end."""
    for line in body.splitlines():
        for m in re.finditer(r"(?:\$\{CLAUDE_PLUGIN_ROOT\}/scripts/)?\b([a-z_]+)\.py\b([^`\n]*)", line):
            if m.group(1) in SCRIPT_NAMES:
                yield m.group(1), m.group(2)


def counting_instructions(body: str) -> list[str]:
    """Sentences that tell the reader to count or compute something, with no script named and no negation."""
    bad = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n\s*[-*\d.]+\s+|\n\n", body):
        if COUNT_VERB_RE.search(sentence) and not EXCUSED_RE.search(sentence):
            bad.append(" ".join(sentence.split()))
    return bad


@pytest.mark.parametrize("name", SIX)
def test_front_matter_follows_claude_code_rules(name):
    meta, _ = skill(name)
    assert meta["name"] == name
    # the skill listing shares one description budget: keep each short
    assert 40 <= len(meta["description"]) <= 300, len(meta["description"])
    tools = meta.get("allowed-tools", "")
    assert "Skill(assay:optimize)" not in tools
    assert not re.search(r"Bash(\s|$)|Bash\(\*\)|scripts/\*", tools), "no blanket Bash or scripts/* wildcard"


def test_optimize_is_user_invoked_only_and_others_never_run_it():
    meta, _ = skill("optimize")
    assert meta["disable-model-invocation"] is True
    for name in SIX:
        if name != "optimize":
            assert skill(name)[0].get("disable-model-invocation") is not True


@pytest.mark.parametrize("name", SIX)
def test_allowed_tools_permit_exactly_the_scripts_named(name):
    meta, body = skill(name)
    tools = meta.get("allowed-tools", "")
    allowed = ALLOWED_SCRIPT_RE.findall(tools)
    for script in set(allowed):
        assert allowed.count(script) == 2, f"{script}: both the quoted and the unquoted form"
    # a script the skill's own references/ tell the agent to run is a call of the skill too
    references = "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "skills" / name / "references").glob("*.md")))
    assert set(allowed) == named_scripts(body + references)


@pytest.mark.parametrize("name", SIX)
def test_every_script_and_flag_named_exists(name):
    _, body = skill(name)
    for script in PLUGIN_SCRIPT_RE.findall(body):
        assert (SCRIPTS / f"{script}.py").is_file(), script
    checked = 0
    for script, rest in script_commands(body):
        helptext = script_help(script)
        for flag in FLAG_RE.findall(rest):
            assert re.search(rf"(?<![\w-]){re.escape(flag)}\b", helptext), f"{name}: {script}.py has no {flag}"
            checked += 1
    if name not in ("help",):
        assert checked, f"{name}: names no script flag at all?"


@pytest.mark.parametrize("name", SIX)
def test_the_hard_rules_are_in_every_skill(name):
    _, body = skill(name)
    text = " ".join(body.split())
    assert re.search(r"holdout", text, re.I)
    if name != "help":
        assert "One plain command per Bash call" in text
        assert "denied" in text and "never retry it" in text
        assert "Every number you show comes from a script" in text
        assert "Worked example" in body and "examples/helpdesk" in body


@pytest.mark.parametrize("name", SIX)
def test_no_skill_tells_the_agent_to_count_what_a_script_provides(name):
    _, body = skill(name)
    assert counting_instructions(body) == []


def test_the_counting_check_can_fail():
    assert counting_instructions("Count the failing cases and report the rate.")
    assert counting_instructions("Then compute TPR from the labels.")
    assert not counting_instructions("Never count files yourself.")
    assert not counting_instructions("`holdout.py looks` counts the ledger.")


def test_worked_examples_quote_what_the_scripts_print_on_the_example():
    from assay.suite.coverage import coverage
    from assay.suite.dedupe import dedupe_state_dir

    state = ROOT / "examples" / "helpdesk" / ".assay"
    cov, dup = coverage(state), dedupe_state_dir(state)
    text = {name: " ".join(skill(name)[1].split()) for name in ("start", "generate", "optimize")}
    for name, body in text.items():
        assert f'"cases": {cov["cases"]}' in body, name
    sp = cov["splits"]
    gen = text["generate"]
    for split in ("smoke", "holdout", "canary", "INV+DIR"):
        assert f"`{split}` {sp[split]['count']} (`{sp[split]['status']}`" in gen, split
    assert f"target at most {sp['INV+DIR']['target']}" in gen
    for cell in cov["empty_cells"]["unit_test_type"]:
        assert f"`{cell['unit']}`/`{cell['test_type']}`" in gen
    pairs = [(p["a"], p["b"], p["rouge_l"]) for p in dup["pairs"]]
    assert len(pairs) == 1 and f"`{pairs[0][0]}`/`{pairs[0][1]}` (ROUGE-L {pairs[0][2]}" in gen
    assert f"with {sp['smoke']['count']} smoke cases" in text["start"]
    assert f"prints `\"cases\": {sp['smoke']['count']}`" in text["start"] and '`"k": 1`' in text["start"]


def test_the_cost_a_skill_quotes_is_the_plans_app_calls(tmp_path):
    """start and optimize quote a run's cost in app calls: they said `cases` × `k` (a number no script
    prints, and wrong for a suite with conversations: the example's smoke plan is 20 cases and 30 calls).
    They quote make_plan.py's `app_calls`, and start's worked example is what make_plan prints on it."""
    from helpdesk_util import copy_state
    from helpers import run_script

    state = copy_state(tmp_path)
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    plan = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                      "-o", work / "plan.json")
    assert plan.rc == 0, plan.stdout + plan.stderr
    calls, cases = plan.json["app_calls"], plan.json["cases"]
    assert calls > cases * plan.json["k"]   # the example has conversations: the two numbers differ
    start = " ".join(skill("start")[1].split())
    assert f'"app_calls": {calls}' in start and f"at most {calls} app calls" in start
    assert f"costs {cases} app calls" not in start
    for name in ("start", "optimize"):
        text = " ".join(skill(name)[1].split())
        assert "`app_calls`" in text and "`cases` × `k` app calls" not in text, name


def test_the_run_skill_reads_the_looks_left_from_the_script():
    """run §4 told the agent to "count its lines" of the holdout ledger before a holdout run (a count no
    script gave it, against every skill's hard rule); it runs `holdout.py looks`, whose keys it names."""
    from assay.suite.holdout import looks

    text = " ".join((ROOT / "skills" / "run" / "SKILL.md").read_text(encoding="utf-8").split())
    assert "count its lines" not in text
    assert "${CLAUDE_PLUGIN_ROOT}/scripts/holdout.py looks <state-dir>" in text
    state = ROOT / "examples" / "helpdesk" / ".assay"
    for key in ("remaining", "reseal_due"):
        assert key in looks(state) and f"`{key}`" in text, key
