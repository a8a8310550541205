"""Errors as RFC 9457 problem details with a stable `type` slug."""

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

logger = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"


class AppError(Exception):
    """Base of every error the service reports to clients on purpose."""

    status_code = 500
    type = "/problems/internal"
    title = "Internal error"
    headers: dict[str, str] | None = None

    def __init__(self, detail: str, *, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors


class NotFound(AppError):
    status_code = 404
    type = "/problems/not-found"
    title = "Not found"


class Conflict(AppError):
    status_code = 409
    type = "/problems/conflict"
    title = "Conflict"


class VersionConflict(Conflict):
    type = "/problems/version-conflict"
    title = "Version conflict"


class MalformedJson(AppError):
    status_code = 400
    type = "/problems/malformed-json"
    title = "Malformed JSON"


class PayloadTooLarge(AppError):
    status_code = 413
    type = "/problems/payload-too-large"
    title = "Payload too large"


class Forbidden(AppError):
    status_code = 403
    type = "/problems/forbidden"
    title = "Forbidden"


class Unprocessable(AppError):
    status_code = 422
    type = "/problems/validation"
    title = "Validation failed"


class SensitiveContent(Unprocessable):
    type = "/problems/sensitive-content"
    title = "Sensitive content refused"


class RateLimited(AppError):
    status_code = 429
    type = "/problems/rate-limited"
    title = "Too many requests"

    def __init__(self, detail: str, *, retry_after_seconds: int) -> None:
        super().__init__(detail)
        self.headers = {"Retry-After": str(retry_after_seconds)}


class Unavailable(AppError):
    status_code = 503
    type = "/problems/unavailable"
    title = "Service unavailable"
    headers = {"Retry-After": "1"}


class Problem(BaseModel):
    """The body of every error response (RFC 9457)."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, Any]] | None = None


def problem_responses(*problems: type[AppError]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for routes that can answer these problems: one entry per status,
    served as application/problem+json and naming each problem type it can carry."""
    by_status: dict[int, list[type[AppError]]] = {}
    for problem in problems:
        by_status.setdefault(problem.status_code, []).append(problem)
    return {
        status: {
            "description": "; ".join(f"{problem.title} (`{problem.type}`)" for problem in same),
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status, same in by_status.items()
    }


# What any route that reads input and the database can answer.
REQUEST_PROBLEMS = problem_responses(MalformedJson, PayloadTooLarge, Unprocessable, Unavailable)


def problem_body(
    *, type: str, title: str, status: int, detail: str, errors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"type": type, "title": title, "status": status, "detail": detail}
    if errors is not None:
        body["errors"] = errors
    return body


def problem_of(error: AppError) -> dict[str, Any]:
    return problem_body(
        type=error.type, title=error.title, status=error.status_code, detail=error.detail, errors=error.errors
    )


def problem_response(body: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=body["status"], media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def validation_errors(raw_errors: Any) -> list[dict[str, Any]]:
    """Pydantic errors reduced to what a client needs: where and what."""
    return [
        {"loc": [str(part) for part in error.get("loc", ())], "msg": error.get("msg", ""), "type": error.get("type", "")}
        for error in raw_errors
    ]


async def _app_error_handler(_: Request, error: AppError) -> JSONResponse:
    return problem_response(problem_of(error), headers=error.headers)


def validation_problem(raw_errors: Any) -> dict[str, Any]:
    """The 422 problem for pydantic errors, naming the first field in `detail`."""
    errors = validation_errors(raw_errors)
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    return problem_body(
        type=Unprocessable.type,
        title=Unprocessable.title,
        status=422,
        detail=f"{'.'.join(first['loc']) or 'request'}: {first['msg']}",
        errors=errors,
    )


async def _request_validation_handler(_: Request, error: RequestValidationError) -> JSONResponse:
    errors = validation_errors(error.errors())
    if any(item["type"] == "json_invalid" for item in errors):
        body = problem_of(MalformedJson("The request body is not valid JSON.", errors=errors))
    else:
        body = validation_problem(error.errors())
    return problem_response(body)


def _allowed_methods(request: Request) -> str:
    """Every method served at the request's path. The router's 405 names only the first route
    matching the path, though `/v1/events` (GET and POST) is two routes. Included routers nest,
    so the routes are walked through FastAPI's flattened view of them."""
    routes = iter_route_contexts(request.app.routes)
    matching = [route for route in routes if route.matches(dict(request.scope))[0] != Match.NONE]
    return ", ".join(sorted({method for route in matching for method in route.methods or ()}))


async def _http_error_handler(request: Request, error: StarletteHTTPException) -> JSONResponse:
    slug = {404: "not-found", 405: "method-not-allowed"}.get(error.status_code, f"http-{error.status_code}")
    body = problem_body(
        type=f"/problems/{slug}", title=str(error.detail), status=error.status_code, detail=str(error.detail)
    )
    headers = getattr(error, "headers", None)
    if error.status_code == 405:
        headers = {**(headers or {}), "Allow": _allowed_methods(request)}
    return problem_response(body, headers=headers)


# Driver errors that mean "the database cannot answer now", not "this request is wrong".
# Failures to connect never get here: app.core.database turns them into Unavailable.
_TIMEOUT_CAUSES = {"QueryCanceledError", "LockNotAvailableError"}  # statement or lock timeout
_LOST_CAUSES = {"ConnectionDoesNotExistError"}


def _unavailable_detail(error: DBAPIError) -> str | None:
    cause = type(error.orig.__cause__ if error.orig is not None else None).__name__
    if cause in _TIMEOUT_CAUSES:
        return "the database did not answer in time; retry shortly"
    if error.connection_invalidated or cause in _LOST_CAUSES:
        return "the connection to the database was lost; retry shortly"
    return None


# PostgreSQL rolled the whole transaction back because a concurrent one won (deadlock victim,
# serialization failure): running the request again is safe, and app.core.retry does so.
CONFLICT_SQLSTATES = frozenset({"40P01", "40001"})
LOST_TO_CONFLICT = "hindsight.lost_to_conflict"


def lost_to_conflict(error: DBAPIError) -> bool:
    cause = error.orig.__cause__ if error.orig is not None else None
    return getattr(cause, "sqlstate", None) in CONFLICT_SQLSTATES


async def _database_error_handler(request: Request, error: DBAPIError) -> JSONResponse:
    if lost_to_conflict(error):
        logger.warning("transaction lost to a concurrent one: %s", type(error.orig.__cause__).__name__)
        request.scope[LOST_TO_CONFLICT] = True
        return await _app_error_handler(request, Unavailable("a concurrent request conflicted with this one; retry shortly"))
    detail = _unavailable_detail(error)
    if detail is None:
        return await _unexpected_error_handler(request, error)
    logger.warning("database unavailable: %s", type(error.orig).__name__)
    return await _app_error_handler(request, Unavailable(detail))


async def _pool_timeout_handler(request: Request, _: PoolTimeout) -> JSONResponse:
    # Every connection stayed busy (or kept failing to open) for the pool timeout.
    logger.warning("no database connection free within the pool timeout")
    return await _app_error_handler(request, Unavailable("no database connection was free in time; retry shortly"))


async def _unexpected_error_handler(_: Request, error: Exception) -> JSONResponse:
    logger.exception("unhandled error", exc_info=error)
    body = problem_body(
        type="/problems/internal", title="Internal error", status=500, detail="An unexpected error occurred."
    )
    return problem_response(body)


def _document_problem_schema(app: FastAPI) -> None:
    """Put Problem, which problem_responses refer to, among the schema's components. It cannot
    come in as a response `model`: FastAPI would also list it as application/json."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()  # built once and cached by FastAPI; the addition below sticks to it
        schema.setdefault("components", {}).setdefault("schemas", {}).setdefault("Problem", Problem.model_json_schema())
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def install_error_handlers(app: FastAPI) -> None:
    _document_problem_schema(app)
    app.add_exception_handler(AppError, _app_error_handler)
    app.add_exception_handler(RequestValidationError, _request_validation_handler)
    app.add_exception_handler(StarletteHTTPException, _http_error_handler)
    app.add_exception_handler(DBAPIError, _database_error_handler)
    app.add_exception_handler(PoolTimeout, _pool_timeout_handler)
    app.add_exception_handler(Exception, _unexpected_error_handler)
