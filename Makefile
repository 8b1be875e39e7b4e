# assay: two commands set up and run everything on a fresh machine.
#   make demo   the whole pipeline on the bundled example app (MODE=smoke|regression|targeted|holdout, BREAK=1, FLAKY=1, APP=http|cli|agent, SHARDS=3, TRACES=otlp-http, CALIBRATE=1, COMPARE=1, VIEW=1 [VIEW_SECONDS=N])
#   make bench  the runner's own cost against the quality bars (bench/RESULTS.md)
#   make bench-check     the benchmarks at a tiny size, so they cannot rot (CI runs it after make test)
#   make test   the whole test suite
#   make claude-cli      the pinned Claude Code CLI (Node from PyPI, the CLI from npm) for the plugin checks
#   make promptfoo       the pinned promptfoo (npm) for the side-by-side test and bench
#   make frameworks      the agent frameworks whose pins collide with the test extra (CrewAI, Google ADK),
#                        each in its own venv .venv/frameworks-<name> from requirements/frameworks-<name>.txt
#   make plugin-release  the lean plugin layout a marketplace serves (dist/assay-plugin)
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
MODE   ?= smoke
APP    ?= http
CLAUDE_CODE_VERSION ?= 2.1.332
# parallel test workers: 6 on 2 cores keeps both busy while tests wait on their apps (measured on a quiet
# 2-core machine: 3 workers 235 s, 4 workers 222 s; with round 8's tests 4 workers 242-248 s, 5 240 s,
# 6 240 s, 8 250 s); a file's tests run on one worker (--dist loadfile), so a module fixture (an example
# run, a built venv) is built once
TEST_WORKERS ?= 6

# the end-to-end framework matrix's apps that cannot share the test extra's pins (tests/framework_venvs.py)
FRAMEWORK_VENVS := crewai adk

.PHONY: test bench-check demo bench venv clean claude-cli plugin-release promptfoo frameworks

venv: $(VENV)/.installed

# editable_mode=compat: the checkout's scripts/ on sys.path by a plain .pth line; the default (strict)
# mode's import finder costs every Python process the suite starts ~20 ms (tens of CPU-s a run)
$(VENV)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -e '.[test]' --config-settings editable_mode=compat
	@touch $@

test: venv
	$(VPY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=10 -m 'not bench_smoke' $(PYTEST_ARGS)

bench-check: venv
	$(VPY) -m pytest -n $(TEST_WORKERS) --dist loadfile -m bench_smoke $(PYTEST_ARGS) tests/

demo: venv
	$(if $(filter agent,$(APP)),$(VPY) examples/agent/demo.py,$(VPY) examples/helpdesk/demo.py --mode $(MODE) --app $(APP) $(if $(filter 1 true yes,$(BREAK)),--break,) $(if $(filter 1 true yes,$(FLAKY)),--flaky,) $(if $(SHARDS),--shards $(SHARDS),) $(if $(TRACES),--traces $(TRACES),) $(if $(filter 1 true yes,$(CALIBRATE)),--calibrate,) $(if $(filter 1 true yes,$(COMPARE)),--compare,) $(if $(filter 1 true yes,$(VIEW)),--view,) $(if $(VIEW_SECONDS),--view-seconds $(VIEW_SECONDS),))

bench: venv
	$(VPY) bench/run.py $(BENCH_ARGS)
	$(VPY) bench/trace_join.py --json bench/out/trace_join.json
	$(VPY) bench/first_bars.py --json bench/out/first_bars.json
	$(VPY) bench/rate_limits.py --json bench/out/rate_limits.json
	$(VPY) bench/shards.py --json bench/out/shards.json
	$(VPY) bench/compare.py --json bench/out/compare.json
	$(VPY) bench/replay.py --json bench/out/replay.json
	$(VPY) bench/first_failure.py --json bench/out/first_failure.json
	$(VPY) bench/stats.py --json bench/out/stats.json
	$(VPY) bench/scale.py --out bench/out
	$(VPY) bench/store.py --concurrency 4 --json bench/out/store.json

claude-cli: venv
	$(VPY) tools/install_claude_cli.py --version $(CLAUDE_CODE_VERSION) --prefix $(VENV)/claude-code

promptfoo:
	npm install --prefix $(VENV)/promptfoo --no-audit --no-fund --silent promptfoo@$$(sed -n 's/^PROMPTFOO_VERSION = "\(.*\)"/\1/p' bench/promptfoo.py)

frameworks: $(foreach f,$(FRAMEWORK_VENVS),$(VENV)/frameworks-$(f)/.installed)

# built anew whenever its requirements file changes; every package pinned, so pip resolves nothing new
$(VENV)/frameworks-%/.installed: requirements/frameworks-%.txt
	rm -rf $(VENV)/frameworks-$*
	$(PYTHON) -m venv $(VENV)/frameworks-$*
	$(VENV)/frameworks-$*/bin/python -m pip install --quiet --disable-pip-version-check -r $<
	$(VENV)/frameworks-$*/bin/python -m pip check
	@touch $@

plugin-release:
	$(PYTHON) tools/plugin_release.py --out dist/assay-plugin

clean:
	rm -rf $(VENV) .pytest_cache dist
