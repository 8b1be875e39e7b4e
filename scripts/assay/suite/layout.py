"""Which files of a state dir are its cases, and the case files no run reads (contracts §6).

`case_files(state)` is every case file under datasets/ (what convert_state_dir reads);
`refuse_misplaced_cases(state)` is AssayError(2) naming each case-shaped file left where no run
reads it (elsewhere in the state dir, a near miss of `.yaml` under datasets/, or a `datasets/`
folder beside the state dir) and where it goes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.strict_yaml import load

CASE_SUFFIXES = (".yaml", ".yml")
MANIFEST_NAMES = ("dataset.yaml", "dataset.yml")
SKIPPED_DIRS = ("templates",)


def _rel(state: Path, path: Path) -> str:
    return path.relative_to(state).as_posix()


def _inside(state_real: Path, path: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(state_real)
        return True
    except ValueError:
        return False


def case_files(state: Path) -> list[Path]:
    """Every case file under datasets/ (sorted), skipping templates/ dirs and the manifest.

    Symlinks that leave the state dir are refused (AssayError); directory symlinks
    inside it are not followed (their files are reached by the real path already).
    """
    datasets = state / "datasets"
    state_real = Path(os.path.realpath(state))
    if not datasets.is_dir():
        raise AssayError(f"{state}: no datasets/ directory; put one case per YAML file under datasets/", 2)
    if not _inside(state_real, datasets):
        raise AssayError("datasets/ is a symlink that leaves the state dir; refusing to read it", 2)
    found = []
    for root, dirs, files in os.walk(datasets, followlinks=False):
        root_path = Path(root)
        for d in list(dirs):
            full = root_path / d
            if full.is_symlink() and not _inside(state_real, full):
                raise AssayError(f"{_rel(state, full)}: is a symlink that leaves the state dir; refusing to read it",
                                 2, file=_rel(state, full))
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            full = root_path / name
            if not name.endswith(CASE_SUFFIXES) or name.startswith("."):
                continue
            if root_path == datasets and name in MANIFEST_NAMES:
                continue
            if not _inside(state_real, full):
                raise AssayError(f"{_rel(state, full)}: is a symlink that leaves the state dir; refusing to read it",
                                 2, file=_rel(state, full))
            found.append(full)
    return sorted(found, key=lambda p: _rel(state, p))


# what the pipeline writes into a state dir (never a user's case): not searched for misplaced cases
GENERATED_DIRS = ("reports", "work", "cache", "candidates", "annotations", "durations")


def _case_shaped(doc: Any) -> bool:
    """A mapping that reads as a case (an `expect` beside an `input` or an `id`), or a list of them."""
    if isinstance(doc, list):
        return any(_case_shaped(item) for item in doc if isinstance(item, dict))
    return isinstance(doc, dict) and "expect" in doc and ("input" in doc or "id" in doc)


def _yaml_misnamed(name: str) -> str | None:
    """The `.yaml` name a case file under datasets/ was meant to have when its own is a near miss that
    case_files() skips (`c-1.YAML`, `c-1.yaml.txt`, `c-1.yaml ` or no suffix at all), else None. A
    deliberate set-aside (`c-1.yaml~`, `.bak`, `.orig`, `.disabled`, ...) is not a near miss."""
    low = name.strip().lower()
    for suffix in (".yaml.txt", ".yml.txt") + CASE_SUFFIXES:
        if low.endswith(suffix):
            return name.strip()[:-len(suffix)] + ".yaml"
    return name + ".yaml" if "." not in name else None


class _ReadPaths:
    """The real paths case_files() reads, listed on first use (asked only of a case-shaped file found
    outside the state's datasets/): a file a symlink under datasets/ points at is read through it."""

    def __init__(self, state: Path) -> None:
        self.state, self._paths = state, None

    def __contains__(self, path: Path) -> bool:
        if self._paths is None:
            try:
                self._paths = {os.path.realpath(p) for p in case_files(self.state)}
            except AssayError:
                self._paths = set()
        return os.path.realpath(path) in self._paths


def _holds_case(full: Path, label: str) -> bool:
    """The file parses and reads as a case (_case_shaped); one that does not parse is not a case here."""
    try:
        doc, _ = load(full, label)
    except AssayError:
        return False
    return _case_shaped(doc)


def misplaced_case_files(state: Path) -> list[tuple[str, str]]:
    """The files of the state dir that hold a case no run reads, each with where it goes
    (`(relative path, relative target)`, sorted by path).

    Only `datasets/**/*.yaml|yml` is read for cases, so a case written to `<state>/cases/`,
    `<state>/dataset/` or beside adapter.yaml, or saved under datasets/ as `c-1.YAML`, `c-1.yaml.txt`
    or `c-1`, was left out of every plan without a word: its failure never reached the gate.
    Generated dirs (reports/, work/, ...), hidden ones and datasets' templates/ are not searched; a
    file that does not parse is not a case here. A file that a symlink under datasets/ points at is
    read through it, so it is not misplaced. A `datasets/` folder beside the state dir is looked at
    too (its own case files only: _beside_case_files)."""
    read = _ReadPaths(state)
    datasets = state / "datasets"
    found = []
    for root, dirs, files in os.walk(state, followlinks=False):
        root_path = Path(root)
        under_datasets = root_path == datasets or datasets in root_path.parents
        if root_path == state:
            dirs[:] = [d for d in dirs if d not in GENERATED_DIRS]
        elif under_datasets:
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or (under_datasets and name.endswith(CASE_SUFFIXES)):
                continue   # hidden, or read by case_files() (datasets' manifest included): no second look
            if under_datasets:
                target = _yaml_misnamed(name)
                target = _rel(state, root_path / target) if target else None
            else:
                target = f"datasets/{name}" if name.endswith(CASE_SUFFIXES) else None
            full = root_path / name
            if target is None or full.is_symlink():
                continue
            label = _rel(state, full)
            if _holds_case(full, label) and (under_datasets or full not in read):
                found.append((label, target))
    return found + _beside_case_files(state, read)


BESIDE_MAX_BYTES = 256 << 10   # a file of the datasets/ beside the state dir read as a case at most this big


def _beside_case_files(state: Path, read: _ReadPaths) -> list[tuple[str, str]]:
    """The case files of a `datasets/` folder put beside the state dir instead of in it
    (`./datasets/c-1.yaml` next to `.assay/`), as `("../datasets/c-1.yaml", ".assay/datasets/c-1.yaml")`.
    Only that one folder's own files are looked at, never the rest of the parent (a big repo). Skipped
    when the parent is not the app's dir: the state dir is a repo root (holds .git), its parent is `/`,
    or the parent is a state dir itself (its datasets/ is read by its own runs)."""
    parent = state.parent
    beside = parent / "datasets"
    if (parent == state or parent.parent == parent or (state / ".git").exists()
            or (parent / "adapter.yaml").is_file() or not beside.is_dir()
            or os.path.realpath(beside) in (os.path.realpath(state), os.path.realpath(state / "datasets"))):
        return []
    found = []
    for full in sorted(beside.iterdir()):
        name = full.name
        if name.startswith(".") or not name.endswith(CASE_SUFFIXES) or name in MANIFEST_NAMES:
            continue
        label = f"../datasets/{name}"
        if full.is_symlink() or not full.is_file() or full.stat().st_size > BESIDE_MAX_BYTES:
            continue   # (a big YAML there is the app's data, not a case: never parsed on every convert)
        if _holds_case(full, label) and full not in read:
            found.append((label, f"{state.name}/datasets/{name}"))
    return found


def refuse_misplaced_cases(state: Path) -> None:
    """AssayError(2) naming each case file no run would read and where it belongs."""
    stray = misplaced_case_files(state)
    if not stray:
        return
    moves = "; ".join(f"{label} -> {target}" for label, target in stray[:5])
    more = f" and {len(stray) - 5} more" if len(stray) > 5 else ""
    labels = [label for label, _ in stray]
    beside = (f" (the datasets/ beside {state.name}/ is not read: {state.name}/datasets/ is)"
              if any(label.startswith("../") for label in labels) else "")
    raise AssayError(f"{len(stray)} case file(s) that no run would read: {moves}{more}. "
                     "Cases are read only from datasets/ (sub-folders are fine), one case per .yaml or .yml "
                     f"file{beside}: move or rename each as shown, or delete it", 2, file=labels[0],
                     files=labels[:20])
