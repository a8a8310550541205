"""Options of the maintenance calls. Each may come as a JSON body or, as before, in the query
string; the same option given both ways with different values is refused."""

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, StrictBool

from app.core.validation import RequestBody, integer


class DryRunOptions(RequestBody):
    dry_run: StrictBool = Field(default=False, description="Report what would change, change nothing.")


class ReembedOptions(RequestBody):
    limit: integer(ge=1) | None = Field(default=None, description="Stop after this many memories; a later call resumes.")


def option(name: str, body: BaseModel | None, query: Any, default: Any) -> Any:
    """The option's value from the body or the query string (they must agree), else the default."""
    given = body is not None and name in body.model_fields_set
    if given and query is not None and getattr(body, name) != query:
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("query", name), "msg": f"{name} differs from the body's; give it once", "input": query}]
        )
    if given:
        return getattr(body, name)
    return default if query is None else query
