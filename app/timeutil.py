"""Timezone-aware UTC time, the only kind this service handles (STYLE rule 11)."""
from datetime import UTC, datetime


def utcnow():
    """Return the current time as an aware UTC ``datetime``."""
    return datetime.now(UTC)


def from_timestamp(seconds):
    """Return an aware UTC ``datetime`` for a Unix timestamp in seconds, or ``None`` for ``None``."""
    return None if seconds is None else datetime.fromtimestamp(int(seconds), UTC)


def isoformat_z(value):
    """Return ``value`` as ISO 8601 UTC with a ``Z`` suffix (CONTRACT), or ``None``."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
