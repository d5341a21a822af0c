"""``PLAN_FEATURES`` and ``ENTITLEMENT_ALERT_THRESHOLDS`` read and checked at start (CONTRACT "Entitlements").

Pure parsing, no app imports: ``app.config`` calls it while building the app. Each failure is one
``ConfigError`` line naming the variable, the plan and the feature.
"""
import json
import re
from pathlib import Path

from app.config_values import ConfigError

FEATURE_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
RESETS = ("period", "never")
_QUOTA_KEYS = {"limit", "reset", "meter", "overage"}
NAME = "PLAN_FEATURES"


def _document(raw):
    """The JSON text of ``raw`` (``@path`` reads the file), decoded."""
    if isinstance(raw, dict):
        return raw
    text = str(raw or "").strip() or "{}"
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{NAME}: cannot read {text[1:]!r}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{NAME} must be JSON (or @path to a JSON file): {exc}") from None


def _quota(where, spec):
    unknown = sorted(set(spec) - _QUOTA_KEYS)
    if unknown:
        raise ConfigError(f"{NAME}: {where} has unknown key {unknown[0]!r} "
                          f"(a quota takes {', '.join(sorted(_QUOTA_KEYS))})")
    if "limit" not in spec:
        raise ConfigError(f"{NAME}: {where} needs a limit (a whole number >= 0, or null for unlimited)")
    limit = spec["limit"]
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit < 2**63):
        raise ConfigError(f"{NAME}: {where} limit must be a whole number >= 0 or null, got {limit!r}")
    reset = spec.get("reset", "period")
    if reset not in RESETS:
        raise ConfigError(f"{NAME}: {where} reset must be period or never, got {reset!r}")
    meter = spec.get("meter")
    if meter is not None and (not isinstance(meter, str) or not 1 <= len(meter) <= 100):
        raise ConfigError(f"{NAME}: {where} meter must be a Billing Meter's event_name, got {meter!r}")
    overage = spec.get("overage", False)
    if not isinstance(overage, bool):
        raise ConfigError(f"{NAME}: {where} overage must be true or false, got {overage!r}")
    # Units past the limit are billed by the meter's price: without a meter they would be given away.
    if overage and meter is None:
        raise ConfigError(f"{NAME}: {where} has overage without a meter: units past the limit would not be billed")
    return {"type": "quota", "limit": limit, "reset": reset, "meter": meter, "overage": overage}


def _feature(where, spec):
    if isinstance(spec, bool):
        return {"type": "boolean", "enabled": spec}
    if isinstance(spec, dict):
        return _quota(where, spec)
    raise ConfigError(f"{NAME}: {where} must be true, false or a quota object, got {spec!r}")


def _check_types(plans):
    """A feature is a boolean in every plan or a quota in every plan: a check must mean one thing."""
    seen = {}
    for plan, features in plans.items():
        for feature, spec in features.items():
            first = seen.setdefault(feature, (plan, spec["type"]))
            if first[1] != spec["type"]:
                raise ConfigError(f"{NAME}: feature {feature!r} is a {first[1]} in plan {first[0]!r} "
                                  f"but a {spec['type']} in plan {plan!r}")


def plan_features(raw, plan_names):
    """Return ``{plan: {feature: spec}}`` from ``raw`` (JSON text, ``@path`` or a dict); raise ``ConfigError``.

    ``plan_names``: the plans a billable can be on (``PROVIDER_PLANS``' values and ``FREE_PLAN``). A
    spec is ``{"type": "boolean", "enabled"}`` or ``{"type": "quota", "limit" (int or None), "reset",
    "meter" (str or None), "overage"}``.
    """
    document = _document(raw)
    if not isinstance(document, dict):
        raise ConfigError(f'{NAME} must be a JSON object of plan -> features, e.g. {{"pro": {{"sso": true}}}}')
    plans = {}
    for plan, features in document.items():
        if plan not in plan_names:
            raise ConfigError(f"{NAME}: plan {plan!r} is neither in PROVIDER_PLANS nor FREE_PLAN "
                              f"(known: {', '.join(sorted(plan_names))})")
        if not isinstance(features, dict):
            raise ConfigError(f"{NAME}: plan {plan!r} must map feature names to true, false or a quota")
        for feature in features:
            if not FEATURE_NAME.fullmatch(feature):
                raise ConfigError(f"{NAME}: plan {plan!r} has feature {feature!r}, not a feature name "
                                  "(^[a-z][a-z0-9_.-]{0,63}$)")
        plans[plan] = {feature: _feature(f"plan {plan!r} feature {feature!r}", spec)
                       for feature, spec in features.items()}
    _check_types(plans)
    return plans


def alert_thresholds(raw):
    """Return ``ENTITLEMENT_ALERT_THRESHOLDS`` (``"80,100"``) as a sorted tuple of percentages 1-100."""
    text = ",".join(map(str, raw)) if isinstance(raw, (list, tuple)) else str(raw if raw is not None else "")
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not all(part.isdigit() and 1 <= int(part) <= 100 for part in parts):
        raise ConfigError(f"ENTITLEMENT_ALERT_THRESHOLDS must be comma-separated percentages 1-100, e.g. 80,100, "
                          f"got {raw!r}")
    return tuple(sorted({int(part) for part in parts}))
