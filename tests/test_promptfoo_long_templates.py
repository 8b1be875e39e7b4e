"""A promptfoo config whose text is long and odd (a pasted document in a prompt file, a padded
contains-any value, a transformResponse with a run of blanks) is imported in time linear in its
length, with what it converted before.

The importer read templates with backtracking regexes: `{{-?\\s*(.*?)\\s*-?}}` tried a `{{` before a long
run of blanks with every split of the rest (cubic: 1,000 blanks ~2 s, 10 KB ~30 min), each unclosed
`{{`, `{%` or `{% for %}` was read again to the end of the text (quadratic in the openers), and the
blanks before `{{-`, JavaScript's trim of a contains-any field and a transformResponse's
`return ... ;}` were each tried from every blank of a run. import_promptfoo.py runs as a user runs
it; the timeout bounds a hang only (never a speed bar).
"""

from __future__ import annotations

import json

import pytest
import yaml

from helpers import run_script

CONFIG = """description: long texts
prompts: [file://prompt.txt]
providers:
  - id: http
    config:
      url: http://127.0.0.1:9/chat
      method: POST
      body: {{message: '{{{{prompt}}}}'}}
      transformResponse: {transform}
tests:
  - description: hours
    vars: {{question: Opening hours}}
    assert:
      - type: contains-any
        value: {value}
"""
BLANKS = " " * 500_000
PROMPTS = {
    "a {{ before a long run of blanks": "Q: {{question}}\nExample: {{" + " " * 100_000 + "\nend",
    "a long run of blanks": "{{question}}" + BLANKS + "x",
    "many unclosed {{": "Q: {{question}} " + "{{" * 200_000,
    "many unclosed {%": "Q: {{question}} " + "{%" * 200_000,
}


def _run(tmp_path, prompt: str, *, transform: str = "json.answer", value: str = "open, closed"):
    cfg = tmp_path / "pf"
    cfg.mkdir(parents=True)
    (cfg / "promptfooconfig.yaml").write_text(CONFIG.format(transform=json.dumps(transform), value=json.dumps(value)))
    (cfg / "prompt.txt").write_text(prompt)
    state = tmp_path / ".assay"
    r = run_script("import_promptfoo", cfg / "promptfooconfig.yaml", "--state-dir", state, "--app-url-env", "APP_URL",
                   timeout=300)
    return r, state


def _import(tmp_path, prompt: str, **kw):
    r, state = _run(tmp_path, prompt, **kw)
    assert r.rc == 0, r.stdout + r.stderr
    (case,) = [yaml.safe_load(f.read_text()) for f in (state / "datasets" / "promptfoo").glob("*.yaml")]
    return json.loads(r.stdout), case, state


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_a_long_prompt_is_rendered_as_before(tmp_path, name):
    prompt = PROMPTS[name]
    _, case, _ = _import(tmp_path, prompt)
    # the variable rendered, the rest (an unclosed opener, the blanks) sent as written
    assert case["input"]["messages"] == [{"role": "user", "content": prompt.replace("{{question}}", "Opening hours")}]
    assert case["expect"]["answer"]["must_contain"] == ["/(?:open|closed)/"]


def test_many_unclosed_for_loops_are_named_as_a_block_not_read_for_minutes(tmp_path):
    """Each unclosed loop was read to the end of the text, by the `_conversation` loop's pass and again by
    the renderer's: 8,000 openers took ~7 s, this 100,000 ~20 min."""
    prompt = "Q: {{question}} " + "{% for m in _conversation %}" * 100_000
    r, _ = _run(tmp_path, prompt)
    assert r.rc == 2 and "the prompt uses the Nunjucks block '{% for m in _conversation %}'" in r.stdout, r


def test_a_padded_contains_any_field_is_trimmed_as_javascript_trims_it(tmp_path):
    _, case, _ = _import(tmp_path, "{{question}}", value="open" + BLANKS + "now , closed")
    assert case["expect"]["answer"]["must_contain"] == ["/(?:open" + BLANKS + "now|closed)/"]


def test_a_transform_response_with_a_run_of_blanks_is_read_as_before(tmp_path):
    """A function body that is a plain path becomes the adapter's answer path; one that is code is named."""
    _, _, state = _import(tmp_path, "{{question}}", transform="(r) => { return r.answer" + " " * 20_000 + "; }")
    assert yaml.safe_load((state / "adapter.yaml").read_text())["invocation"]["response_body"] == '{"answer": "<answer>"}'
    out, _, _ = _import(tmp_path / "code", "{{question}}",
                        transform="(r) => { return r.answer" + " " * 20_000 + "|| r.text; }")
    assert "transformResponse" in json.dumps(out["not_converted"] + out["notes"]), out
