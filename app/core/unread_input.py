"""Every documented endpoint refuses input it does not read: a query parameter it does not
declare, or a body where it takes none, is a 422 naming it. Silently ignoring it once ran a real
checkup for `{"dry_run": true}` sent as JSON, and hid `/debug/recent?limit=` behind `n`."""

from fastapi import Request, params
from fastapi.dependencies.utils import get_flat_params
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute


# Routes do not change once the app serves; they are unhashable, so they are known by id (and
# kept, so no id is reused).
_known: dict[int, tuple[APIRoute, frozenset[str], bool]] = {}


def _reads(route: APIRoute) -> tuple[frozenset[str], bool]:
    """(the query parameters the route declares, whether it takes a body)."""
    if (known := _known.get(id(route))) is None or known[0] is not route:
        fields = get_flat_params(route.dependant)
        query = frozenset(field.alias for field in fields if isinstance(field.field_info, params.Query))
        known = _known[id(route)] = (route, query, route.body_field is not None)
    return known[1], known[2]


def _has_body(request: Request) -> bool:
    return int(request.headers.get("content-length") or 0) > 0 or "transfer-encoding" in request.headers


async def refuse_unread_input(request: Request) -> None:
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not route.include_in_schema:
        return  # undocumented helpers (the docs' OAuth redirect, /metrics) read what they like
    query, takes_body = _reads(route)
    reads = ", ".join(sorted(query)) or "none"
    errors = [
        {
            "type": "extra_forbidden",
            "loc": ("query", name),
            "msg": f"Unknown query parameter; this endpoint reads: {reads}",
            "input": request.query_params.get(name),
        }
        for name in dict.fromkeys(request.query_params.keys())
        if name not in query
    ]
    if not takes_body and _has_body(request):
        errors.append({"type": "extra_forbidden", "loc": ("body",), "msg": "This endpoint takes no request body", "input": None})
    if errors:
        raise RequestValidationError(errors)
