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

`--serve PORT_FILE` is the same stand-in behind the Chat Completions wire (an `openai` judge at a
local `base_url`), one process for every call: `POST <url>/v1/chat/completions` answers as the
first stand-in, `<url>/b/v1/chat/completions` as `--variant b`. It writes `{"url": ...}` to
PORT_FILE once it listens and serves until it is stopped. `make demo CALIBRATE=1` judges its
hundreds of calls this way (a command starts one process a call).
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


def with_usage(verdict: dict, prompt: str) -> dict:
    text = json.dumps(verdict)
    usage = {"input_tokens": len(prompt) // 4, "output_tokens": len(text) // 4}   # made up, fixed
    return dict(verdict, usage=usage)


# pairwise node id -> the pattern the better answer holds (the arrival rule above)
PAIRWISE = {"clearer-arrival": RULES["states-arrival"][0]}


def pairwise(prompt: str) -> dict:
    """A pairwise prompt (two answers, A and B): prefer the one the node's pattern finds, tie otherwise."""
    node = re.search(r"^Rubric: \S+ +Node: (\S+) +Kind: pairwise$", prompt, re.M)
    a = re.search(r"<untrusted-answer-A-([0-9a-f]+)>\n(.*?)\n</untrusted-answer-A-\1>", prompt, re.S)
    b = re.search(r"<untrusted-answer-B-([0-9a-f]+)>\n(.*?)\n</untrusted-answer-B-\1>", prompt, re.S)
    rule = PAIRWISE.get(node.group(1)) if node else None
    if not (rule and a and b):
        return {"preferred": "tie", "reason": f"{LABEL} cannot compare these"}
    in_a, in_b = bool(re.search(rule, a.group(2))), bool(re.search(rule, b.group(2)))
    preferred = "tie" if in_a == in_b else ("A" if in_a else "B")
    return {"preferred": preferred, "reason": f"{LABEL} says when the money arrives: A {in_a}, B {in_b}"}


def judge(prompt: str, variant_b: bool = False) -> dict:
    """The stand-in's reply to one judge prompt: a verdict with its usage, or a pairwise preference."""
    if "Kind: pairwise" in prompt:
        return pairwise(prompt)
    label = LABEL.replace("stand-in judge", "stand-in judge b") if variant_b else LABEL
    rules = RULES_B if variant_b else RULES
    node = re.search(r"^Rubric: \S+ +Node: (\S+)$", prompt, re.M)
    answer = (re.search(r"<untrusted-answer-([0-9a-f]+)>\n(.*?)\n</untrusted-answer-\1>", prompt, re.S)
              or re.search(r"<untrusted-conversation-([0-9a-f]+)>\n(.*?)\n</untrusted-conversation-\1>", prompt, re.S))
    if not node or not answer:
        return with_usage({"verdict": "unknown", "evidence": [], "reason": f"{label} could not read the prompt"}, prompt)
    rule = rules.get(node.group(1))
    if rule is None:
        verdict = {"verdict": "unknown", "evidence": [], "reason": f"{label} has no rule for node {node.group(1)}"}
    else:
        found = re.search(rule[0], answer.group(2))
        verdict = ({"verdict": "pass", "evidence": [found.group(0)], "reason": f"{label} found {rule[1]}"}
                   if found else {"verdict": "fail", "evidence": [], "reason": f"{label} found no {rule[1]}"})
    return with_usage(verdict, prompt)


def serve(port_file: str) -> int:
    """--serve PORT_FILE: the stand-in over the Chat Completions wire (the module docstring)."""
    import os
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            if not self.path.endswith("/v1/chat/completions"):
                return self.reply(404, {"error": {"message": f"no such path {self.path}"}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                said = {m["role"]: m["content"] for m in body["messages"]}
            except (ValueError, KeyError, TypeError):
                return self.reply(400, {"error": {"message": "not a Chat Completions request"}})
            # the text a command judge reads on stdin (assay's as_stdin): the same verdicts either way
            prompt = f"{said.get('system', '')}\n\n---\n\n{said.get('user', '')}\n"
            doc = judge(prompt, variant_b=self.path.startswith("/b/"))
            usage = doc.pop("usage", None)
            out = {"object": "chat.completion", "model": body.get("model"),
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": json.dumps(doc)}}]}
            if usage:
                out["usage"] = {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"]}
            self.reply(200, out)

        def reply(self, status: int, doc: dict) -> None:
            data = json.dumps(doc).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"url": f"http://127.0.0.1:{server.server_address[1]}", "pid": os.getpid()}, fh)
    os.replace(tmp, port_file)   # whole or absent: the demo waits for it
    server.serve_forever()
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--serve"] and len(sys.argv) == 3:
        return serve(sys.argv[2])
    print(json.dumps(judge(sys.stdin.read(), variant_b=sys.argv[1:3] == ["--variant", "b"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
