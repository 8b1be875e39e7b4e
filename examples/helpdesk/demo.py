#!/usr/bin/env python3
"""`make demo`: the whole assay pipeline on the bundled helpdesk app, in one command.

Starts examples/helpdesk/app.py on a free port (spans to <state>/work/helpdesk.otlp.jsonl),
exports HELPDESK_BASE_URL and HELPDESK_OTLP_FILE, then runs, each as a subprocess with
this interpreter:

    convert_suite -> validate_cases -> make_plan -> run_cases -> gate -> draft_report -> md_to_html

(with --shards N: make_plan --shards N, N run_cases --shard I processes at once, merge_runs)

prints the gate's one-screen summary and the path of report.html, stops the app
(always, also on error) and exits with the gate's code: 0 open, 1 closed. A step
that cannot do its job stops the demo with exit 2 and a message naming the step.

    python3 examples/helpdesk/demo.py                  # smoke run, gate opens
    python3 examples/helpdesk/demo.py --break          # planted regressions, gate closes
    python3 examples/helpdesk/demo.py --mode regression --flaky   # k=3: pass@k vs pass^k
    python3 examples/helpdesk/demo.py --app cli        # the same desk as a command (cli.py, .assay-cli/)
    python3 examples/helpdesk/demo.py --shards 3       # 3 shards in parallel, merged, gated
    python3 examples/helpdesk/demo.py --traces otlp-http  # the runner receives the spans over OTLP/HTTP
    python3 examples/helpdesk/demo.py --compare        # a clean run, then the broken app, compared

With --compare (`make demo COMPARE=1`) the pipeline runs twice, first against the clean app,
then against the broken one (--break, with run_cases.py --baseline <the clean run>, so the pairwise
rubric refund-reply-vs-baseline judges each broken answer against the clean one in both orders;
gate.py --baseline <the clean run> gates it: it closes on the newly failing cases, named first, and
draft_report.py is given the same --baseline, so report.md's banner says so too), and then
compare_runs.py pairs the two runs (compare.json and compare.html in the second run's directory).

With --app cli no server is started: run_cases.py runs examples/helpdesk/cli.py once per
attempt (state dir .assay-cli/, spans to <state>/work/helpdesk.otlp.jsonl, BREAK=1 in its
environment for --break).

With --traces otlp-http (http app only) the app is started with --otlp-endpoint pointing at a
free loopback port and no span file, and the converted suite's adapter gets
`traces: {source: otlp-http, location: 127.0.0.1:<port>}` (what adapter.yaml says for an app
exporting with an OTel SDK); run_cases listens there and reads the spans it receives.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCRIPTS = ROOT / "scripts"
APP = HERE / "app.py"
DEFAULT_STATE = HERE / ".assay"
DEFAULT_STATE_FOR = {"http": DEFAULT_STATE, "cli": HERE / ".assay-cli"}
MODES = ("smoke", "regression", "targeted", "holdout")
# Runner exits that still leave a run directory the gate and report can read (contracts §5.11).
RUNNER_FINISHED = {0: "complete", 4: "a canary failed; run stopped", 5: "infra rate too high; run stopped",
                   6: "completeness check failed", 7: "a scorer rejected its input"}


class StepFailed(Exception):
    """A pipeline step could not do its job; the message names the step and what to look at."""


def shown(path: Path) -> str:
    """A path as the user should read it: relative to the current directory when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def say(msg: str = "") -> None:
    print(msg, flush=True)


STANDIN = "../judge_standin.py"   # the example's judge.yaml runs it from the state dir


def place_judge_standin(state: Path) -> None:
    """A copy of the example's state dir outside examples/helpdesk/ keeps judge.yaml's
    `command: [python3, ../judge_standin.py]`: put the stand-in beside the copy (only when the
    copy's judge.yaml runs it and nothing is there yet), so the demo works wherever the copy is."""
    judge = state / "judge" / "judge.yaml"
    target = state.parent / "judge_standin.py"
    try:
        runs_it = STANDIN in judge.read_text(encoding="utf-8")
    except OSError:
        return
    if runs_it and not target.exists() and not target.is_symlink():
        shutil.copy2(HERE / "judge_standin.py", target)
        say(f"  judge stand-in  copied to {shown(target)} (judge.yaml runs {STANDIN} from the state dir)")


def run_step(name: str, argv: list[str], env: dict[str, str],
             ok: frozenset[int] | set[int] = frozenset({0})) -> subprocess.CompletedProcess:
    """Run one pipeline script; stdout/stderr are captured and shown only when it fails."""
    if not Path(argv[0]).is_file():
        raise StepFailed(f"step '{name}' failed: {argv[0]} does not exist")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, encoding="utf-8",
                          errors="replace", env=env, cwd=str(ROOT))
    took = time.monotonic() - t0
    if proc.returncode not in ok:
        detail = (proc.stdout.strip() + "\n" + proc.stderr.strip()).strip()
        raise StepFailed(f"step '{name}' failed (exit {proc.returncode}, {took:.1f}s): "
                         f"{' '.join(Path(a).name if i == 0 else a for i, a in enumerate(argv))}\n"
                         + "\n".join("    " + line for line in detail.splitlines()[-25:]))
    return proc


def last_json(text: str) -> dict:
    """The last JSON object printed on stdout (scripts print one), or {}."""
    for line in reversed(text.strip().splitlines()):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            return doc
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, dict) else {}
    except ValueError:
        return {}


class Child:
    """A child process that writes where it listens to a port file (`{"url": ...}`): the demo app,
    the calibration demo's judge stand-in. `launch`, then `wait_ready`; `stop` ends it."""

    port_file: Path
    log_file: Path
    proc: subprocess.Popen | None = None

    def launch(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.port_file.unlink(missing_ok=True)
        self._log = open(self.log_file, "w", encoding="utf-8")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self._log, env=env,
                                     start_new_session=True)

    def wait_ready(self, step: str, who: str, not_ready: str, timeout_s: float,
                   ready: Callable[[str], bool] = lambda url: True) -> str:
        """The port file's url once `ready(url)` holds; StepFailed naming the step and the log otherwise."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise StepFailed(f"step '{step}' failed: {who} exited with {self.proc.returncode}; "
                                 f"see {self.log_file}")
            if self.port_file.exists():
                try:
                    url = json.loads(self.port_file.read_text(encoding="utf-8"))["url"]
                    if ready(url):
                        return url
                except (OSError, ValueError, KeyError):
                    pass
            time.sleep(0.05)
        raise StepFailed(f"step '{step}' failed: {not_ready} within {timeout_s:.0f}s; see {self.log_file}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if getattr(self, "_log", None):
            self._log.close()


class App(Child):
    """The example app as a child process on a free port."""

    def __init__(self, work: Path, *, broken: bool, flaky: bool, otlp_listen: str | None = None) -> None:
        self.otlp_listen = otlp_listen  # host:port the runner listens on (traces.source otlp-http)
        self.work = work
        self.broken, self.flaky = broken, flaky
        self.otlp_file = work / "helpdesk.otlp.jsonl"
        self.port_file = work / "helpdesk.port.json"
        self.log_file = work / "helpdesk.log"
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None

    def start(self, timeout_s: float = 20.0) -> str:
        self.otlp_file.unlink(missing_ok=True)
        spans = (["--otlp-endpoint", f"http://{self.otlp_listen}"] if self.otlp_listen
                 else ["--otlp-file", str(self.otlp_file)])
        argv = [sys.executable, str(APP), "--port", "0", *spans, "--port-file", str(self.port_file), "--verbose"]
        argv += ["--break"] if self.broken else []
        argv += ["--flaky"] if self.flaky else []
        env = {k: v for k, v in os.environ.items() if k not in ("BREAK", "FLAKY", "OTEL_EXPORTER_OTLP_ENDPOINT")}
        self.launch(argv, env)
        self.url = self.wait_ready("start app", "the app", "no healthy app", timeout_s, _healthy)
        return self.url


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(url + "/healthz", timeout=2) as resp:
        return resp.status == 200


def pipeline(args: argparse.Namespace, state: Path, env: dict[str, str],
             baseline: Path | None = None, gate_flags: tuple[str, ...] = ()) -> tuple[int, Path | None]:
    """convert -> validate -> plan -> run -> gate -> report; returns (gate exit code, report.html).
    `baseline`: the run pairwise rubrics compare this run's answers with (run_cases.py --baseline).
    `gate_flags`: gate.py's decision flags, flag and value pairs (--baseline RUN); draft_report.py is given the same,
    so report.md's banner is the decision the gate printed, with its reasons."""
    work = state / "work"
    split = work / "split"
    converted = work / "converted.json"

    run_step("convert_suite", [str(SCRIPTS / "convert_suite.py"), str(state), "-o", str(converted),
                               "--split-dir", str(split)], env)
    if getattr(args, "otlp_listen", None):
        use_otlp_http(args.otlp_listen, converted, split / "adapter.json")
    suite = json.loads(converted.read_text(encoding='utf-8'))['cases']
    n_canaries = sum(1 for c in suite if "canary" in (c.get("split") or []))
    say(f"  convert_suite   {len(suite) - n_canaries} cases + {n_canaries} canaries "
        f"-> {shown(converted)}")

    validate = [str(SCRIPTS / "validate_cases.py"), "--cases", str(converted),
                "--capabilities", str(split / "capabilities.json"), "--adapter", str(split / "adapter.json")]
    if (split / "manifest.json").exists():
        validate += ["--manifest", str(split / "manifest.json")]
    lint = last_json(run_step("validate_cases", validate, env).stdout)
    say(f"  validate_cases  {lint.get('error_count', '?')} errors, {lint.get('warn_count', '?')} warnings")

    plan_file = work / "plan.json"
    make_plan = [str(SCRIPTS / "make_plan.py"), str(converted), "--mode", args.mode, "--state-dir", str(state),
                 "-o", str(plan_file)]
    if args.mode == "targeted":
        make_plan += ["--tag", args.tag]
    if args.shards:
        make_plan += ["--shards", str(args.shards)]
    if (state / "judge" / "judge.yaml").is_file():
        make_plan += ["--judge"]  # judge smoke/targeted runs too (regression and holdout judge by default)
    for _ in range(3):  # run ids have one-second resolution: never reuse a finished run's directory
        plan = last_json(run_step("make_plan", make_plan, env).stdout)
        run_id = plan.get("run_id") or json.loads(plan_file.read_text(encoding="utf-8"))["run_id"]
        out = Path(plan.get("out") or state / "reports" / run_id)
        if not out.exists():
            break
        time.sleep(1.05)
    say(f"  make_plan       {run_id}: {plan.get('counts', '?')}, k={plan.get('k', '?')}, "
        f"gate {plan.get('gate', '?')}")

    t0 = time.monotonic()
    if args.shards:
        run_shards(args.shards, plan_file, run_id, out, env)
    else:
        runner = run_step("run_cases", [str(SCRIPTS / "run_cases.py"), "--plan", str(plan_file), "--out", str(out),
                                        "--progress", "never", *(["--baseline", str(baseline)] if baseline else [])],
                          env, ok=set(RUNNER_FINISHED))
        say(f"  run_cases       exit {runner.returncode} ({RUNNER_FINISHED[runner.returncode]}) "
            f"in {time.monotonic() - t0:.1f}s -> {shown(out)}")

    gate = run_step("gate", [str(SCRIPTS / "gate.py"), str(out), *gate_flags], env, ok={0, 1})
    say(f"  gate            {'open' if gate.returncode == 0 else 'CLOSED'} (exit {gate.returncode})"
        + (" with " + " ".join(shown(Path(f)) if i % 2 else f for i, f in enumerate(gate_flags)) if gate_flags else ""))
    report_md = out / "report.md"
    report_html = out / "report.html"
    run_step("draft_report", [str(SCRIPTS / "draft_report.py"), str(out), "-o", str(report_md), "--force",
                              *gate_flags], env)
    run_step("md_to_html", [str(SCRIPTS / "md_to_html.py"), str(report_md), str(report_html)], env)
    say(f"  draft_report    {report_md.name}; md_to_html -> {report_html.name}")
    cost = last_json(run_step("score_cost", [str(SCRIPTS / "score_cost.py"), str(out)], env).stdout)
    totals = cost.get("totals") or {}
    spent = (totals.get("cost") or {}).get("total")
    say(f"  score_cost      {totals.get('input_tokens', '?')} in + {totals.get('output_tokens', '?')} out tokens "
        f"over {totals.get('model_calls', '?')} model calls"
        + (f" = {spent:.6f} {cost.get('currency')}" if spent is not None else " (not priced)")
        + f"; p95 latency {((totals.get('latency_ms') or {}).get('p95') or 0):.0f} ms")
    say()
    say(gate.stdout.rstrip())
    say()
    say(f"report: {shown(report_html)}")
    return gate.returncode, report_html


def run_shards(count: int, plan_file: Path, run_id: str, out: Path, env: dict[str, str]) -> None:
    """`--shards N`: N run_cases.py processes at once (as N CI machines would), then merge_runs.py."""
    t0 = time.monotonic()
    dirs = [out.parent / f"{run_id}.shard-{i}" for i in range(1, count + 1)]
    procs = []
    for i, shard_dir in enumerate(dirs, start=1):
        argv = [sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(plan_file), "--shard", str(i),
                "--out", str(shard_dir), "--progress", "never"]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      encoding="utf-8", errors="replace", env=env, cwd=str(ROOT)))
    for i, (proc, shard_dir) in enumerate(zip(procs, dirs), start=1):
        stdout, stderr = proc.communicate()
        if proc.returncode not in RUNNER_FINISHED:
            detail = (stdout.strip() + "\n" + stderr.strip()).strip()
            raise StepFailed(f"step 'run_cases --shard {i}' failed (exit {proc.returncode})\n"
                             + "\n".join("    " + line for line in detail.splitlines()[-25:]))
        say(f"  run_cases       shard {i}/{count}: exit {proc.returncode} ({RUNNER_FINISHED[proc.returncode]}) "
            f"-> {shown(shard_dir)}")
    say(f"                  {count} shards in parallel: {time.monotonic() - t0:.1f}s")
    merged = run_step("merge_runs", [str(SCRIPTS / "merge_runs.py"), "--plan", str(plan_file), "--out", str(out),
                                     *map(str, dirs)], env, ok=set(RUNNER_FINISHED) - {6})
    say(f"  merge_runs      exit {merged.returncode} ({RUNNER_FINISHED[merged.returncode]}) -> {shown(out)}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="demo.py", description=__doc__.split("\n\n")[0],
                                epilog="example: python3 examples/helpdesk/demo.py --mode smoke --break")
    p.add_argument("--mode", choices=MODES, default="smoke", help="run mode (default smoke)")
    p.add_argument("--tag", default="billing", help="with --mode targeted: the unit or route to select")
    p.add_argument("--break", dest="broken", action="store_true",
                   help="start the app with its planted regressions (the gate closes)")
    p.add_argument("--flaky", action="store_true", help="start the app with a flaky answer (try --mode regression)")
    p.add_argument("--app", choices=("http", "cli"), default="http",
                   help="http: start app.py and call it over HTTP (default); cli: run cli.py per case")
    p.add_argument("--shards", type=int, metavar="N",
                   help="split the plan into N shards run as N parallel processes, then merge them (merge_runs.py)")
    p.add_argument("--state-dir", type=Path, default=None,
                   help="the .assay state dir to use (default: the example's own, .assay-cli for --app cli)")
    p.add_argument("--keep-app", action="store_true", help="leave the app running afterwards (prints its pid)")
    p.add_argument("--traces", choices=("otlp-file", "otlp-http"), default="otlp-file",
                   help="how the runner gets the http app's spans: a span file (default) or OTLP/HTTP to the runner")
    p.add_argument("--view", action="store_true",
                   help="afterwards, serve the runs in view.py (127.0.0.1, a free port) and print its URL; Ctrl-C stops it")
    p.add_argument("--view-seconds", type=float, default=None,
                   help="with --view: stop the viewer after this many seconds (scripts and tests)")
    p.add_argument("--compare", action="store_true",
                   help="a clean run, then the broken app, then compare_runs.py and gate.py --baseline on the pair")
    p.add_argument("--calibrate", action="store_true",
                   help="the judge-calibration loop instead (calibrate_demo.py): run, cluster, label page, "
                        "scripted labels, score_agreement, a calibrated judged gate; on a copy of the state dir")
    return p


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def use_otlp_http(listen: str, *adapter_docs: Path) -> None:
    """Switch the converted suite's adapter to `traces.source: otlp-http` on `listen`."""
    for path in adapter_docs:
        doc = json.loads(path.read_text(encoding="utf-8"))
        adapter = doc["adapter"] if "adapter" in doc and "traces" not in doc else doc
        adapter["traces"] = {**(adapter.get("traces") or {}), "source": "otlp-http", "location": listen}
        path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def stopped(exc: BaseException) -> int:
    """The demo's exit when a step failed (2) or the user pressed Ctrl-C (130), said on stderr."""
    if isinstance(exc, KeyboardInterrupt):
        print("\ndemo interrupted", file=sys.stderr)
        return 130
    print(f"\ndemo failed: {exc}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    state = (args.state_dir or DEFAULT_STATE_FOR[args.app]).resolve()
    code = _main(args, state)
    if args.view and code in (0, 1):   # every mode's runs, once the demo has made them (a gate may close: 1)
        view(state, args.view_seconds)
    return code


def _main(args: argparse.Namespace, state: Path) -> int:
    if args.calibrate:
        from calibrate_demo import loop  # beside this file
        return loop(state)
    if args.compare:
        return main_compare(args, state)
    if args.app == "cli":
        if args.traces == "otlp-http":
            print(json.dumps({"error": "--traces otlp-http needs the http app (--app http): the command writes "
                                       "its spans to a file"}))
            return 2
        return main_cli(args, state)
    if not (state / "adapter.yaml").is_file():
        print(json.dumps({"error": f"--state-dir {state} has no adapter.yaml; point it at an .assay dir"}))
        return 2
    work = state / "work"
    work.mkdir(parents=True, exist_ok=True)
    if args.traces == "otlp-http" and args.shards:
        print(json.dumps({"error": "--traces otlp-http with --shards: the shards run at once on one machine and "
                                   "would all listen on one port; use one or the other"}))
        return 2
    args.otlp_listen = f"127.0.0.1:{free_port()}" if args.traces == "otlp-http" else None
    app = App(work, broken=args.broken or os.environ.get("BREAK", "") in ("1", "true", "yes"),
              flaky=args.flaky or os.environ.get("FLAKY", "") in ("1", "true", "yes"), otlp_listen=args.otlp_listen)
    say(f"assay demo: helpdesk example, mode {args.mode}"
        + (", app BROKEN (--break)" if app.broken else "") + (", app FLAKY" if app.flaky else "")
        + (f", {args.shards} shards" if args.shards else ""))
    place_judge_standin(state)
    try:
        url = app.start()
        spans_to = f"OTLP/HTTP {args.otlp_listen} (the runner listens)" if args.otlp_listen else app.otlp_file.name
        say(f"  app             {url} (pid {app.proc.pid}), spans -> {spans_to}")
        env = dict(os.environ, HELPDESK_BASE_URL=url, HELPDESK_OTLP_FILE=str(app.otlp_file))
        env.pop("PYTHONPATH", None)
        code, _ = pipeline(args, state, env)
        return code
    except (StepFailed, KeyboardInterrupt) as exc:
        return stopped(exc)
    finally:
        if args.keep_app and app.proc is not None and app.proc.poll() is None:
            say(f"app left running at {app.url} (pid {app.proc.pid}); stop it with: kill {app.proc.pid}")
        else:
            app.stop()


def view(state: Path, seconds: float | None) -> None:
    """Serve the state dir's runs in view.py (read-only) and print the URL it prints."""
    cmd = [sys.executable, str(SCRIPTS / "view.py"), str(state)]
    cmd += ["--serve-seconds", str(seconds)] if seconds else []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = json.loads(line).get("url") if line.strip().startswith("{") else None
        say(f"viewer: {url} (read-only; " + (f"stops after {seconds:g} s)" if seconds else "Ctrl-C stops it)"))
        proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(10)


def main_compare(args: argparse.Namespace, state: Path) -> int:
    """--compare: the pipeline on the clean app, then on the broken app, then the two runs compared."""
    if args.app != "http" or args.shards or args.traces != "otlp-file" or args.broken:
        print(json.dumps({"error": "--compare runs the http app twice (clean, then broken) itself: drop --app cli, "
                                   "--shards, --traces and --break"}))
        return 2
    if not (state / "adapter.yaml").is_file():
        print(json.dumps({"error": f"--state-dir {state} has no adapter.yaml; point it at an .assay dir"}))
        return 2
    work = state / "work"
    work.mkdir(parents=True, exist_ok=True)
    args.otlp_listen = None
    runs = []
    place_judge_standin(state)
    try:
        for broken in (False, True):
            app = App(work, broken=broken, flaky=args.flaky)
            say(f"assay demo --compare: run {len(runs) + 1} of 2, mode {args.mode}, app "
                + ("BROKEN (--break)" if broken else "clean"))
            try:
                url = app.start()
                env = dict(os.environ, HELPDESK_BASE_URL=url, HELPDESK_OTLP_FILE=str(app.otlp_file))
                env.pop("PYTHONPATH", None)
                # the broken run's pairwise rubric (refund-reply-vs-baseline) compares its answers with the clean run's,
                # and it is gated (and its report drafted) against the clean run: gate.py --baseline
                base_flags = ("--baseline", str(runs[0])) if runs else ()
                code, report_html = pipeline(args, state, env, baseline=runs[0] if runs else None,
                                             gate_flags=base_flags)
                runs.append(report_html.parent)
            finally:
                app.stop()
            say()
        base, cand = runs
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        out_json, out_html = cand / "compare.json", cand / "compare.html"
        cmp = last_json(run_step("compare_runs", [str(SCRIPTS / "compare_runs.py"), str(base), str(cand),
                                                  "-o", str(out_json), "--html", str(out_html)], env).stdout)
        say(f"  compare_runs    {base.name} -> {cand.name}: {cmp.get('headline')}")
        say()
        say(f"compare: {shown(out_html)}")
        return code   # the second pipeline's gate.py --baseline <the clean run>
    except (StepFailed, KeyboardInterrupt) as exc:
        return stopped(exc)


def main_cli(args: argparse.Namespace, state: Path) -> int:
    """The pipeline against the command-line face: nothing to start, the runner runs cli.py."""
    if not (state / "adapter.yaml").is_file():
        print(json.dumps({"error": f"--state-dir {state} has no adapter.yaml; point it at an .assay dir"}))
        return 2
    broken = args.broken or os.environ.get("BREAK", "") in ("1", "true", "yes")
    if args.flaky or os.environ.get("FLAKY", "") in ("1", "true", "yes"):
        print(json.dumps({"error": "--flaky needs the HTTP app (its flaky answer alternates within one "
                                   "process); drop --flaky or use --app http"}))
        return 2
    work = state / "work"
    work.mkdir(parents=True, exist_ok=True)
    otlp_file = work / "helpdesk.otlp.jsonl"
    otlp_file.unlink(missing_ok=True)
    say(f"assay demo: helpdesk example as a command (cli.py), mode {args.mode}"
        + (", BROKEN (--break)" if broken else ""))
    say(f"  app             examples/helpdesk/cli.py, one process per attempt; spans -> {otlp_file.name}")
    env = {k: v for k, v in os.environ.items() if k not in ("BREAK", "FLAKY", "PYTHONPATH")}
    env["HELPDESK_OTLP_FILE"] = str(otlp_file)
    if broken:
        env["BREAK"] = "1"
    try:
        code, _ = pipeline(args, state, env)
        return code
    except (StepFailed, KeyboardInterrupt) as exc:
        return stopped(exc)


if __name__ == "__main__":
    sys.exit(main())
