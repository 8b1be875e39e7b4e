"""The History page's words for a flaky case say what happened: how often it flipped, or in how many runs
its repeats disagreed. Six real runs of a local app: at k = 3 a printer case answers right on two calls
of three in the last two runs (its repeats disagreed; its pass^k verdict went pass → fail once and
stayed), and the viewer listed it under "Flaky" as "1 flips", the words of a case that changed once and
stayed (a regression), with nothing of the repeats that made it flaky. At k = 1 a case that broke and was
fixed (pass, fail, pass) is flaky, flipped back and forth, with its two flips; one that broke and stayed
broken is a regression since the run it broke in, never flaky."""

from __future__ import annotations

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from fakeapp import case, make_state, run_series
from helpers import run_script, view_server

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]

K1 = [f"smoke-2026120{i}T100000Z" for i in (1, 2, 3)]
K3 = [f"smoke-2026120{i}T100000Z" for i in (4, 5, 6)]


def test_flaky_words_say_flips_or_disagreeing_repeats_and_a_break_that_stayed_is_a_regression(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    state = make_state(tmp_path)
    wrong = {K1[1]: {"broke fixed", "broke stays"}, K1[2]: {"broke stays"}}

    def answers_wrong(run_id: str, msg: str, n: int) -> bool:
        flaky = run_id in K3[1:] and msg == "printer" and n % 3 == 0   # one call of three answers wrong
        return flaky or msg in wrong.get(run_id, ())

    run_series(state, K1 + K3, lambda run_id: ([case("c-printer", "printer")] if run_id in K3 else
                                               [case("c-broke-fixed", "broke fixed"), case("c-broke-stays", "broke stays")])
               + [case("c-steady", "steady")], answers_wrong, lambda run_id: 3 if run_id in K3 else 1)
    h = run_script("run_history", state, "-o", tmp_path / "h.json")
    assert h.rc == 0 and h.json["excluded_runs"] == 0, h.stdout + h.stderr
    import json
    k1, k3 = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))["series"]
    assert [(f["case_id"], f["flips"], f["sequence"]) for f in k1["flaky"]] == [("c-broke-fixed", 2, ["pass", "fail", "pass"])]
    assert [(c["case_id"], c["kind"], c["since_run"]) for c in k1["changed"]] == [("c-broke-stays", "regression", K1[1])]
    assert [(f["case_id"], f["flips"], f["repeats_disagreed_in"]) for f in k3["flaky"]] == [("c-printer", 1, K3[1:])]

    with view_server(state) as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url + "#/history")
        page.wait_for_function("() => (document.body.getAttribute('data-ready') || '') === '/history'", timeout=120000)
        page.screenshot(path=str(tmp_path / "history-flaky.png"), full_page=True)
        one, three = page.locator("section.series").all()
        assert one.locator("ul.flaky li").all_inner_texts() == [
            "c-broke-fixed flipped back and forth: 2 flips \u2713 \u2717 \u2713"]
        assert one.locator("ul.changed li").all_inner_texts() == [
            f"regression c-broke-stays since {K1[1]} \u2713 \u2717 \u2717"]
        (printer,) = three.locator("ul.flaky li").all_inner_texts()
        assert printer == "c-printer repeats disagreed in 2 runs, 1 flip \u2713 \u2717 \u2717", printer
        assert "flips" not in printer
        every = page.locator("#flaky li").all_inner_texts()
        assert sorted(every) == sorted([f"{k1['name']}: c-broke-fixed (flipped back and forth: 2 flips)",
                                        f"{k3['name']}: c-printer (repeats disagreed in 2 runs, 1 flip)"]), every
        browser.close()
