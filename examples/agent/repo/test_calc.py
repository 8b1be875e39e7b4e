"""The fixture's own tests: `python3 test_calc.py [add|mul]` (exit 1 on a failure)."""

import sys

import calc


def test_add():
    assert calc.add(2, 3) == 5, f"add(2, 3) == {calc.add(2, 3)}"


def test_mul():
    assert calc.mul(2, 3) == 6, f"mul(2, 3) == {calc.mul(2, 3)}"


if __name__ == "__main__":
    wanted = sys.argv[1:] or ["add", "mul"]
    failed = 0
    for name in wanted:
        try:
            globals()[f"test_{name}"]()
            print(f"test_{name} ok")
        except AssertionError as exc:
            print(f"test_{name} FAILED: {exc}")
            failed += 1
    sys.exit(1 if failed else 0)
