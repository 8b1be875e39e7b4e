#!/usr/bin/env python3
"""A STAND-IN for a judge model, so the demo judges rubrics on any machine with no key.

It is a `command` judge (docs/runner-contract.md, "The judge"): it reads the judge prompt on stdin and
prints the verdict JSON on stdout. It is NOT a model: it knows the two criteria of
`rubrics/refund-eta.md` by node id and checks them with fixed patterns over the answer (a
whole conversation's prompt: over the conversation), and says so in every reason. Any other
node gets `unknown`. `--variant b` is a second stand-in with its own, stricter patterns (the
calibration demo's two-judge ensemble). It reports a made-up token usage (a quarter of the
characters it read and wrote, like the example app's made-up token counts) so the demo can price
the judge (`prices.yaml`). To judge for real, point `.assay/judge/judge.yaml` at a model (see
this directory's README).
"""

import json
import re
import sys

LABEL = "[stand-in judge: fixed patterns, not a model]"
# node id -> (pattern that proves the criterion, what it looks for)
RULES = {
    "states-amount": (r"\d+(?:\.\d+)? ?(?:USD|EUR|GBP|\$)", "an amount with its currency"),
    "states-arrival": (r"within \d+ (?:business )?days|by (?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day|"
                       r"on \d{4}-\d{2}-\d{2}", "when the money arrives"),
}


# the second stand-in (--variant b): stricter patterns that agree with the first on the example's replies
RULES_B = {
    "states-amount": (r"\d+\.\d{2} (?:USD|EUR|GBP)", "an amount to the cent with its currency code"),
    "states-arrival": (r"within \d+ business days", "a number of business days"),
}


def say(verdict: dict, prompt: str) -> None:
    text = json.dumps(verdict)
    usage = {"input_tokens": len(prompt) // 4, "output_tokens": len(text) // 4}   # made up, fixed
    print(json.dumps(dict(verdict, usage=usage)))


# pairwise node id -> the pattern the better answer holds (the arrival rule above)
PAIRWISE = {"clearer-arrival": RULES["states-arrival"][0]}


def pairwise(prompt: str) -> int:
    """A pairwise prompt (two answers, A and B): prefer the one the node's pattern finds, tie otherwise."""
    node = re.search(r"^Rubric: \S+ +Node: (\S+) +Kind: pairwise$", prompt, re.M)
    a = re.search(r"<untrusted-answer-A-([0-9a-f]+)>\n(.*?)\n</untrusted-answer-A-\1>", prompt, re.S)
    b = re.search(r"<untrusted-answer-B-([0-9a-f]+)>\n(.*?)\n</untrusted-answer-B-\1>", prompt, re.S)
    rule = PAIRWISE.get(node.group(1)) if node else None
    if not (rule and a and b):
        print(json.dumps({"preferred": "tie", "reason": f"{LABEL} cannot compare these"}))
        return 0
    in_a, in_b = bool(re.search(rule, a.group(2))), bool(re.search(rule, b.group(2)))
    preferred = "tie" if in_a == in_b else ("A" if in_a else "B")
    print(json.dumps({"preferred": preferred, "reason": f"{LABEL} says when the money arrives: A {in_a}, B {in_b}"}))
    return 0


def main() -> int:
    prompt = sys.stdin.read()
    if "Kind: pairwise" in prompt:
        return pairwise(prompt)
    variant_b = sys.argv[1:3] == ["--variant", "b"]
    label = LABEL.replace("stand-in judge", "stand-in judge b") if variant_b else LABEL
    rules = RULES_B if variant_b else RULES
    node = re.search(r"^Rubric: \S+ +Node: (\S+)$", prompt, re.M)
    answer = (re.search(r"<untrusted-answer-([0-9a-f]+)>\n(.*?)\n</untrusted-answer-\1>", prompt, re.S)
              or re.search(r"<untrusted-conversation-([0-9a-f]+)>\n(.*?)\n</untrusted-conversation-\1>", prompt, re.S))
    if not node or not answer:
        say({"verdict": "unknown", "evidence": [], "reason": f"{label} could not read the prompt"}, prompt)
        return 0
    rule = rules.get(node.group(1))
    if rule is None:
        verdict = {"verdict": "unknown", "evidence": [], "reason": f"{label} has no rule for node {node.group(1)}"}
    else:
        found = re.search(rule[0], answer.group(2))
        verdict = ({"verdict": "pass", "evidence": [found.group(0)], "reason": f"{label} found {rule[1]}"}
                   if found else {"verdict": "fail", "evidence": [], "reason": f"{label} found no {rule[1]}"})
    say(verdict, prompt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
