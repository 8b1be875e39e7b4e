"""The values of the variables a judge's base_url, model or served_model name, as a calibration binds
them (assay.judge.binding): `resolved: {vars, sha256}` in one judge's identity.

`base_url: ${JUDGE_URL}` is the judge the variable's value names: calibrated while it named one server,
another server is another judge. The identity keeps the text and adds a digest of the values, never
a value (values of variables are redacted everywhere assay writes). Only base_url (scheme, host, port
and path: a user, query or fragment may carry a credential and is dropped first), model and
served_model are bound; a key, a header or a command's argv never is. The digest of a guessable value
(a localhost URL, a public model name) can be confirmed by anyone holding the sidecar who guesses it,
which is why nothing that may be a credential goes into it (references/calibration.md).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from ..core.secrets import ENV_REF, env_refs, url_address

RESOLVED_KEYS = ("base_url", "model", "served_model")   # the keys whose ${VAR} values are bound (never a key)


def _address(url: str) -> str:
    """A base_url as bound: scheme, host, port and path (a user, a query or a fragment may carry a credential)."""
    return url_address(url)


def resolved_names(config: Mapping[str, Any]) -> list[str]:
    """The `${VAR}`s one judge block's base_url, model or served_model name (sorted)."""
    return sorted(env_refs([config.get(k) for k in RESOLVED_KEYS if isinstance(config.get(k), str)]))


def resolved_binding(config: Mapping[str, Any], env: Mapping[str, str] | None) -> dict[str, Any] | None:
    """`{vars, sha256}` for one http judge whose base_url/model/served_model name a `${VAR}` (None when
    none does): sha256 over the variable names and those keys' resolved values, first 16 hex digits;
    `sha256: None` when a variable has no value in `env` (no judge can be shown to match it)."""
    names = resolved_names(config)
    if not names:
        return None
    if env is None or any(not env.get(n) for n in names):
        return {"vars": names, "sha256": None}
    values = {k: ENV_REF.sub(lambda m: str(env[m.group(1)]), config[k]) for k in RESOLVED_KEYS
              if isinstance(config.get(k), str)}
    if "base_url" in values:
        values["base_url"] = _address(values["base_url"])
    text = json.dumps({"vars": names, "values": values}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {"vars": names, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]}


def resolved_words(a: Any, b: Any) -> str:
    """What changed in one judge's `resolved` (a sidecar's or a labelled run's, against now), in words."""
    a, b = dict(a or {}), dict(b or {})
    names = ", ".join("${" + str(n) + "}" for n in b.get("vars") or a.get("vars") or [])
    if not a:
        return f"the values of {names} were not bound when it was calibrated"
    if not b:
        return f"{names} no longer named"
    if b.get("sha256") is None:
        return f"{names} not set now, so the judge they name cannot be shown to be the one calibrated"
    plural = len(b.get("vars") or []) > 1
    return (f"the value{'s' if plural else ''} of {names} (base_url/model/served_model) {'are' if plural else 'is'} "
            f"not the one{'s' if plural else ''} it was calibrated with (compared by a digest; a value is never recorded)")
