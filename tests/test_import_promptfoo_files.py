"""import_promptfoo.py reads only regular files inside the config's folder, and survives hostile documents.

Every `file://` reference (a var, a test file, a prompt file, a provider file, a glob) resolves
inside the config's folder after symlinks are resolved, or the import is refused by name (exit 2,
the config's file and line); nothing outside is read, so nothing outside can reach a case file.
Device files, FIFOs and /proc are refused without being read (a named pipe never blocks), and a
document nested 100,000 deep is a named error, not a crash.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import run_script

pytestmark = pytest.mark.slow     # about twenty import subprocesses
CANARY = "CANARY-outside-the-folder-7f3a"
PROVIDER = '[{id: http, config: {url: "http://127.0.0.1:9/chat", body: {message: "{{prompt}}"}}}]'


def _config(folder: Path, var: str, name: str = "promptfooconfig.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text('prompts: ["{{q}} {{d}}"]\n'
                    f"providers: {PROVIDER}\n"
                    "tests:\n"
                    "  - vars: {q: hello, d: \"" + var + "\"}\n"
                    "    assert: [{type: contains, value: hello}]\n", encoding="utf-8")
    return path


def _import(config: Path, state: Path):
    # a FIFO that blocks the import shows up as a timeout here, never as a hung test
    return run_script("import_promptfoo", config, "--state-dir", state, timeout=60)


def _nothing_leaked(state: Path) -> None:
    if state.exists():
        for f in state.rglob("*"):
            if f.is_file():
                assert CANARY not in f.read_text(encoding="utf-8", errors="replace"), f


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(CANARY, encoding="utf-8")
    (tmp_path / "outside" / "tests.yaml").write_text(f"- vars: {{q: {CANARY}}}\n", encoding="utf-8")
    (tmp_path / "cfg").mkdir()
    os.symlink(tmp_path / "outside" / "secret.txt", tmp_path / "cfg" / "link.txt")
    os.symlink(tmp_path / "outside", tmp_path / "cfg" / "linkdir")
    return tmp_path


@pytest.mark.parametrize("ref", [
    "file://../outside/secret.txt",        # a relative path climbing out
    "file://{root}/outside/secret.txt",    # an absolute path
    "file://link.txt",                     # a symlink inside pointing out
    "file://linkdir/secret.txt",           # a path through a symlinked directory
    "file:///proc/self/environ",           # the importer's own environment
])
def test_a_var_file_outside_the_folder_is_refused_by_name(tree, ref):
    ref = ref.format(root=tree)
    state = tree / "s"
    res = _import(_config(tree / "cfg", ref), state)
    assert res.rc == 2, res.stdout + res.stderr
    assert "outside the config's folder" in res.json["error"], res.json
    assert res.json["error"].startswith("promptfooconfig.yaml:4: " + ref), res.json
    assert "Traceback" not in res.stderr
    _nothing_leaked(state)


def test_a_glob_expands_inside_the_folder_only(tree):
    cfg = tree / "cfg"
    (cfg / "tests").mkdir()
    (cfg / "tests" / "a.yaml").write_text("- vars: {q: inside}\n  assert: [{type: contains, value: x}]\n",
                                          encoding="utf-8")
    # a glob reaching out of the folder is refused ...
    (cfg / "out.yaml").write_text('prompts: ["{{q}}"]\ntests: file://../outside/*.yaml\n', encoding="utf-8")
    res = _import(cfg / "out.yaml", tree / "s1")
    assert res.rc == 2 and "outside the config's folder" in res.json["error"], res.stdout
    _nothing_leaked(tree / "s1")
    # ... and so is a glob inside it whose match is a symlink leading out
    os.symlink(tree / "outside" / "tests.yaml", cfg / "tests" / "b.yaml")
    (cfg / "in.yaml").write_text('prompts: ["{{q}}"]\ntests: file://tests/*.yaml\n', encoding="utf-8")
    res = _import(cfg / "in.yaml", tree / "s2")
    assert res.rc == 2 and "tests/b.yaml" not in res.json["error"] and "outside" in res.json["error"], res.stdout
    _nothing_leaked(tree / "s2")
    # without the symlink, the same glob imports what is inside
    (cfg / "tests" / "b.yaml").unlink()
    res = _import(cfg / "in.yaml", tree / "s3")
    assert res.rc == 0 and res.json["cases"] == 1, res.stdout


def test_prompt_and_test_files_outside_are_refused(tree):
    cfg = tree / "cfg"
    (cfg / "p.yaml").write_text("prompts: [file://../outside/secret.txt]\ntests: [{vars: {q: a}}]\n",
                                encoding="utf-8")
    (cfg / "t.yaml").write_text('prompts: ["{{q}}"]\ntests: [file://linkdir/tests.yaml]\n', encoding="utf-8")
    for name in ("p.yaml", "t.yaml"):
        res = _import(cfg / name, tree / name)
        assert res.rc == 2 and "outside the config's folder" in res.json["error"], res.stdout
        _nothing_leaked(tree / name)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_fifos_and_devices_are_refused_without_blocking(tmp_path):
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    os.mkfifo(cfg / "pipe.txt")
    os.mkfifo(cfg / "pipe.yaml")
    res = _import(_config(cfg, "file://pipe.txt"), tmp_path / "s1")       # a var read from a FIFO
    assert res.rc == 2 and "not a regular file" in res.json["error"], res.stdout
    (cfg / "t.yaml").write_text('prompts: ["{{q}}"]\ntests: file://pipe.yaml\n', encoding="utf-8")
    res = _import(cfg / "t.yaml", tmp_path / "s2")                          # a test file that is a FIFO
    assert res.rc == 2 and "not a regular file" in res.json["error"], res.stdout
    res = _import(cfg / "pipe.yaml", tmp_path / "s3")                       # the config itself
    assert res.rc == 2 and "not a regular file" in res.json["error"], res.stdout
    if Path("/dev/zero").exists():
        res = _import(Path("/dev/zero"), tmp_path / "s4")                   # the config is a device
        assert res.rc == 2 and "device" in res.json["error"], res.stdout
        os.symlink("/dev/zero", cfg / "zero.txt")                           # a var reaching it by a link
        res = _import(_config(cfg, "file://zero.txt", "z.yaml"), tmp_path / "s5")
        assert res.rc == 2 and "outside the config's folder" in res.json["error"], res.stdout


def test_a_file_over_the_cap_is_refused_after_reading_only_the_cap(tmp_path):
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    with open(cfg / "big.txt", "wb") as f:       # sparse: 11 MB that take no disk
        f.truncate(11_000_000)
    res = _import(_config(cfg, "file://big.txt"), tmp_path / "s")
    assert res.rc == 2 and "10000000-byte limit" in res.json["error"], res.stdout


@pytest.mark.parametrize("name,text", [
    ("promptfooconfig.json", "[" * 100_000 + "]" * 100_000),
    ("promptfooconfig.yaml", "prompts: " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n"),
    ("tests.json", None),
])
def test_a_document_nested_100000_deep_is_a_named_error(tmp_path, name, text):
    if text is None:      # the config is fine; the test file it points at is the deep one
        (tmp_path / "tests.json").write_text('{"vars": ' * 100_000 + "1" + "}" * 100_000, encoding="utf-8")
        (tmp_path / "c.yaml").write_text('prompts: ["{{q}}"]\ntests: file://tests.json\n', encoding="utf-8")
        config = tmp_path / "c.yaml"
    else:
        config = tmp_path / name
        config.write_text(text, encoding="utf-8")
    res = _import(config, tmp_path / "s")
    assert res.rc == 2, (res.rc, res.stdout[-500:], res.stderr[-500:])
    assert "nesting deeper than" in res.json["error"] and "flatten" in res.json["error"], res.stdout
    assert "Traceback" not in res.stderr
