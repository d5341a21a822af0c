"""Stripe list objects: building, cursor pagination (``limit``, ``starting_after``, ``ending_before``)."""

from __future__ import annotations

from .store import StripeError


def list_object(data: list, url: str, has_more: bool = False) -> dict:
    return {"object": "list", "data": data, "has_more": has_more, "url": url}


def paginate(items: list[dict], params: dict, url: str) -> dict:
    """A Stripe list object over ``items`` (already newest first)."""
    limit = max(1, min(100, int(params.get("limit") or 10)))
    ids = [obj["id"] for obj in items]
    if params.get("starting_after"):
        cursor = params["starting_after"]
        if cursor not in ids:
            raise StripeError(400, f"Invalid starting_after id: {cursor}",
                              param="starting_after")
        items = items[ids.index(cursor) + 1:]
    elif params.get("ending_before"):
        cursor = params["ending_before"]
        if cursor not in ids:
            raise StripeError(400, f"Invalid ending_before id: {cursor}", param="ending_before")
        items = items[:ids.index(cursor)][-limit:]
        return {"object": "list", "data": items, "has_more": ids.index(cursor) > limit,
                "url": url}
    return {"object": "list", "data": items[:limit], "has_more": len(items) > limit,
            "url": url}


def newest_first(objs) -> list[dict]:
    # Ties on ``created`` (one-second resolution) fall back to insertion order.
    return [o for _, o in sorted(enumerate(objs), key=lambda p: (p[1]["created"], p[0]),
                                 reverse=True)]


def strip_data(expand):
    """List endpoints take ``expand[]=data.x``; each element then expands ``x``."""
    return [e[5:] for e in (expand or []) if e.startswith("data.")]
