#!/usr/bin/env python3
"""A STAND-IN for a judge model, so the demo judges rubrics on any machine with no key.

It is a `command` judge (docs/runner-contract.md, "The judge"): it reads the judge prompt on stdin and
prints the verdict JSON on stdout. It is NOT a model: it knows the two criteria of
`rubrics/refund-eta.md` by node id and checks them with fixed patterns over the answer, and
says so in every reason. Any other node gets `unknown`. To judge for real, point
`.assay/judge/judge.yaml` at a model (see this directory's README).
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


def main() -> int:
    prompt = sys.stdin.read()
    node = re.search(r"^Rubric: \S+ +Node: (\S+)$", prompt, re.M)
    answer = re.search(r"<untrusted-answer-([0-9a-f]+)>\n(.*?)\n</untrusted-answer-\1>", prompt, re.S)
    if not node or not answer:
        print(json.dumps({"verdict": "unknown", "evidence": [], "reason": f"{LABEL} could not read the prompt"}))
        return 0
    rule = RULES.get(node.group(1))
    if rule is None:
        verdict = {"verdict": "unknown", "evidence": [], "reason": f"{LABEL} has no rule for node {node.group(1)}"}
    else:
        found = re.search(rule[0], answer.group(2))
        verdict = ({"verdict": "pass", "evidence": [found.group(0)], "reason": f"{LABEL} found {rule[1]}"}
                   if found else {"verdict": "fail", "evidence": [], "reason": f"{LABEL} found no {rule[1]}"})
    print(json.dumps(verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
