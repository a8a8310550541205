from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query
from fastapi.responses import StreamingResponse

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.core.dependencies import EmbedderDep, SessionsDep, SettingsDep
from app.core.errors import Conflict, SensitiveContent, Unprocessable, problem_responses
from app.forgetting.dependencies import NamespacePath
from app.transfer import service
from app.transfer.schemas import ImportResult

router = APIRouter(prefix="/v1/namespaces", tags=["export and import"])

NDJSON = "application/x-ndjson"


@router.get(
    "/{namespace}/export",
    response_class=StreamingResponse,
    # The same bytes under the generic type too: client generators know no JSON Lines type.
    responses={
        200: {
            "content": {
                NDJSON: {"schema": {"type": "string"}},
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            },
            "description": "A header line, then one record per line.",
        }
    },
)
async def export_namespace(namespace: NamespacePath, sessions: SessionsDep, access: AccessDep) -> StreamingResponse:
    """Stream a namespace as JSON Lines: memories with their versions, relations, revisions,
    lessons, events and reviews, every field as stored."""
    access.check(namespace)

    async def lines() -> AsyncIterator[str]:
        async with sessions() as session:
            async for line in service.export_lines(session, namespace=namespace):
                yield line

    filename = namespace.replace(":", "_")
    return StreamingResponse(
        lines(), media_type=NDJSON, headers={"Content-Disposition": f'attachment; filename="{filename}.jsonl"'}
    )


@router.post(
    "/{namespace}/import",
    response_model=ImportResult,
    responses=problem_responses(Conflict, Unprocessable, SensitiveContent),
)
async def import_namespace(
    namespace: NamespacePath,
    body: Annotated[
        bytes,
        Body(
            # Sent as application/x-ndjson or application/octet-stream; documented as the latter,
            # which client generators know.
            media_type="application/octet-stream",
            description="An export, as JSON Lines: a header line, then one record per line.",
        ),
    ],
    session: SessionDep,
    access: AccessDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
    ids: Annotated[
        Literal["keep", "new"], Query(description="keep the file's ids, or give every row a new one")
    ] = "keep",
) -> ImportResult:
    """Restore an export into an empty namespace (all of it or nothing); larger files than the
    request limit go through `python -m app import-namespace`."""
    result = await service.import_text(
        session,
        body=body,
        namespace=namespace,
        ids=ids,
        access=access,
        embedder=embedder,
        max_records=settings.import_max_records,
    )
    return ImportResult.model_validate(result)
