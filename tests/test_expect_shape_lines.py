"""Each expect shape mistake is named at its own line (the newcomer's sweep, trial 14).

Before, a bare string where a list goes, an `http` or `clarify_ok` of the wrong type, a bad
`order_mode`, an args entry with only `calls`, a bad `ordered`, an invalid or typo'd
`json_schema`, a forbidden id the app never writes, ... were all printed by make_plan.py at
`datasets/<file>.yaml:1` (the id line): the user had to hunt for the key. The state dir is
written as a user writes it and planned with make_plan.py as a subprocess.
"""

from __future__ import annotations

from test_no_silent_green import case_yaml, refused_plan, write_state

# expect text -> (the line the mistake is on, the code, the key the message names). Line 12 is `expect:`.
MISTAKES = {
    "  route: quotes\n  tools: {forbidden: book_flight}\n": (14, "string_not_list", "expect.tools.forbidden"),
    "  route: quotes\n  http: {stauts: 404}\n": (14, "bad_expect_shape", "expect.http"),
    "  route: quotes\n  clarify_ok: 'no'\n": (14, "bad_expect_shape", "expect.clarify_ok"),
    "  route: quotes\n  tools:\n    order: [lookup_fare]\n    order_mode: inorder\n":
        (16, "bad_order_mode", "expect.tools.order_mode"),
    "  route: quotes\n  args:\n    lookup_fare: {calls: all}\n": (15, "vacuous_args_entry", "expect.args.lookup_fare"),
    "  route: quotes\n  result:\n    rows: [{a: 1}]\n    ordered: 'yes'\n": (16, "bad_expect_shape", "expect.result.ordered"),
    "  route: quotes\n  format:\n    json_schema: {type: objekt}\n":
        (15, "bad_expect_shape", "expect.format.json_schema"),
    "  route: quotes\n  format:\n    json_schema:\n      type: object\n      requird: [a]\n":
        (17, "unknown_schema_keyword", "expect.format.json_schema"),
    "  route: quotes\n  authz:\n    forbidden_record_ids: [bk-0001]\n":
        (15, "unobservable_record_ids", "expect.authz.forbidden_record_ids"),
}


def test_each_shape_mistake_is_named_at_its_line(tmp_path):
    cases = {f"c-0000000{i}": case_yaml(f"c-0000000{i}", expect=text) for i, text in enumerate(MISTAKES, 1)}
    state = write_state(tmp_path, cases)
    (state / "profile.yaml").write_text((state / "profile.yaml").read_text() + "record_id_pattern: 'BK-[0-9]{4}'\n")
    err = refused_plan(state)["error"]
    for i, (line, code, key) in enumerate(MISTAKES.values(), 1):
        want = f"datasets/c-0000000{i}.yaml:{line}: c-0000000{i} [{code}] {key}"
        assert want in err, (want, err)
