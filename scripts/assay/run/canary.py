"""Why a canary failed, in the runner's exit-4 message: what it got, and 401/403 named as auth."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..core.case_read import read_case_json
from ..core.explain import describe_response
from ..core.vocab import FAIL, LAYER_ORDER


def failed_canary_lines(out: Path, records: list[Mapping[str, Any]], auth: Mapping[str, Any] | None) -> list[str]:
    """One line per failed canary: `canary <id> failed on <layers>: got HTTP 401 {...}: ...`."""
    lines = []
    for record in records:
        if not record.get("canary") or record.get("verdict") != FAIL:
            continue
        cid = record["case_id"]
        layers = record.get("layers") or {}
        failed = [n for n in LAYER_ORDER if (layers.get(n) or {}).get("verdict") == FAIL] or \
            [n for n, v in layers.items() if isinstance(v, Mapping) and v.get("verdict") == FAIL]
        response = read_case_json(out, cid, "response.json")
        lines.append(f"canary {cid} failed on {', '.join(failed) or 'no layer named'}: got "
                     f"{describe_response(response, auth)}")
    return lines
