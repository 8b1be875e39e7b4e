"""assay.judge.local_imports: which modules a command judge's script imports from beside it (bound with
the script, tests/test_trust_judge.py drives it end to end)."""

from __future__ import annotations

from assay.judge.local_imports import MAX_FILES, local_modules


def test_modules_beside_the_script_and_in_its_packages_are_found_recursively(tmp_path):
    (tmp_path / "judge.py").write_text("import json, os.path\nimport helpers\nfrom grading.rules import strict\n"
                                       "from grading import tone\ntry:\n    import optional_mod\nexcept ImportError:\n"
                                       "    pass\n")
    (tmp_path / "helpers.py").write_text("from util import x\n")
    (tmp_path / "util.py").write_text("x = 1\n")
    (tmp_path / "grading").mkdir()
    (tmp_path / "grading" / "__init__.py").write_text("")
    (tmp_path / "grading" / "rules.py").write_text("from .common import c\nfrom . import words\n")
    (tmp_path / "grading" / "common.py").write_text("c = 1\n")
    (tmp_path / "grading" / "words.py").write_text("")
    (tmp_path / "grading" / "tone.py").write_text("")
    (tmp_path / "grading" / "unused.py").write_text("")
    (tmp_path / "notes.py").write_text("")
    found = [rel for rel, _ in local_modules(tmp_path / "judge.py")]
    assert found == ["grading/__init__.py", "grading/common.py", "grading/rules.py", "grading/tone.py",
                     "grading/words.py", "helpers.py", "util.py"]


def test_a_script_that_is_not_python_or_does_not_parse_binds_no_module(tmp_path):
    (tmp_path / "helpers.py").write_text("")
    (tmp_path / "judge.sh").write_text("import helpers\n")
    (tmp_path / "broken.py").write_text("import helpers\ndef (\n")
    (tmp_path / "judge").write_text("#!/usr/bin/env python3\nimport helpers\n")
    assert local_modules(tmp_path / "judge.sh") == [] and local_modules(tmp_path / "broken.py") == []
    assert [rel for rel, _ in local_modules(tmp_path / "judge")] == ["helpers.py"]


def test_the_modules_followed_are_bounded(tmp_path):
    for i in range(MAX_FILES + 20):
        (tmp_path / f"m{i}.py").write_text(f"import m{i + 1}\n")
    (tmp_path / "judge.py").write_text("import m0\nimport judge\n")
    assert len(local_modules(tmp_path / "judge.py")) == MAX_FILES
