from functools import partial
from typing import Annotated, Any

from fastapi import Depends, Request

from app.revisions.queue import defer
from app.revisions.service import Context


def context_of(state: Any) -> Context:
    """The revision context of an app's state (requests, and jobs running beside them)."""
    queue = getattr(state, "revision_queue", None)
    return Context(
        judge=state.judge,
        embedder=state.embedder,
        settings=state.settings,
        defer=partial(defer, queue) if queue is not None else None,
    )


def get_revision_context(request: Request) -> Context:
    return context_of(request.app.state)


RevisionContextDep = Annotated[Context, Depends(get_revision_context)]
