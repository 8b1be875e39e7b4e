"""assay's SessionStart hook: make sure the scripts' Python packages are there.

Claude Code runs this when a session starts (not under `--bare`, which skips
plugin hooks; the scripts then prepare the same environment on first use). It
never blocks the session: whatever happens it exits 0 and prints one line that
says what it did, or what the person can do.

- If the `python3` that runs it already has PyYAML, jsonschema and Markdown,
  there is nothing to do.
- With `ASSAY_NO_BOOTSTRAP` set it builds nothing and names the `pip install` to run.
- Otherwise it builds (once) the environment that `scripts/assay/core/bootstrap.py`
  defines, under the plugin's persistent data directory (`CLAUDE_PLUGIN_DATA`),
  and exports ASSAY_VENV through CLAUDE_ENV_FILE so that every script the
  session runs re-enters it.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))


def main() -> int:
    try:
        sys.stdin.read()  # the hook's JSON input; nothing in it is needed
    except (OSError, ValueError):
        pass
    if sys.version_info < (3, 11):
        print("assay: its scripts need Python >= 3.11, and `python3` here is %d.%d; install a newer "
              "Python and start Claude Code with it on PATH." % sys.version_info[:2])
        return 0
    try:
        from assay.core import bootstrap
    except Exception as exc:  # a broken install must not stop the session
        print(f"assay: cannot load its bootstrap ({exc}); reinstall the plugin.")
        return 0
    try:
        import jsonschema  # noqa: F401
        import markdown  # noqa: F401
        import yaml  # noqa: F401
        print("assay: Python packages present (PyYAML, jsonschema, Markdown).")
        return 0
    except ImportError:
        pass
    off = bootstrap.opted_out()
    if off is not None:   # the person turned the mechanism off: build nothing, reach no package index
        print(f"assay: PyYAML, jsonschema or Markdown is missing from {sys.executable}, and {off.reason}. "
              f"Fix: {off.fix}")
        return 0
    directory = bootstrap.venv_dir()
    try:
        if not bootstrap.is_ready(directory):
            bootstrap.create_venv(directory, log=sys.stdout)
    except bootstrap.BootstrapError as err:
        print(f"assay: could not prepare its Python packages: {err.reason}. Fix: {err.fix}")
        return 0
    except OSError as exc:
        print(f"assay: could not prepare its Python packages in {directory}: {exc}")
        return 0
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if env_file:
        try:
            with open(env_file, "a", encoding="utf-8") as fh:
                fh.write("export ASSAY_VENV=%s\n" % _shell_quote(str(directory)))
        except OSError as exc:
            print(f"assay: packages ready in {directory}, but CLAUDE_ENV_FILE is not writable ({exc}); "
                  "the scripts will find them on their own.")
            return 0
    print(f"assay: Python packages ready in {directory}.")
    return 0


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


if __name__ == "__main__":
    sys.exit(main())
