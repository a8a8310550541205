from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from app.core.auth import AUTHENTICATED_PROBLEMS, AccessDep
from app.core.database import SessionDep
from app.core.dependencies import EngineDep, RecentLimitDep
from app.core.links import MEMORY, links
from app.core.migrations import head_revision
from app.memories import service as memories
from app.memories.dependencies import WriteRateDep
from app.memories.schemas import Namespace, RecentResponse
from app.ops import service
from app.ops.schemas import AnomalyList, Readiness

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get(
    "/readyz", response_model=Readiness, responses={503: {"model": Readiness, "description": "Not ready."}}
)
async def readyz(engine: EngineDep) -> JSONResponse:
    """Ready when the database answers and its schema is at the latest migration."""
    report = await service.readiness(engine, expected_revision=head_revision())
    return JSONResponse(report, status_code=200 if report["ready"] else 503)


@router.get(
    "/debug/recent",
    response_model=RecentResponse,
    responses={**AUTHENTICATED_PROBLEMS, 200: links(MEMORY.at("/memories/0"))},
)
async def debug_recent(
    session: SessionDep,
    access: AccessDep,
    limit: RecentLimitDep,
    namespace: Annotated[Namespace | None, Query()] = None,
) -> RecentResponse:
    """The latest memories with status, version and supersedes chain."""
    access.check(namespace)
    return RecentResponse(memories=await memories.recent(session, n=limit, namespace=namespace))


@router.get("/metrics", include_in_schema=False)
async def metrics(engine: EngineDep) -> Response:
    """Prometheus metrics of this process."""
    body, media_type = await service.metrics_exposition(engine)
    return Response(body, media_type=media_type)


@router.get("/debug/anomalies", response_model=AnomalyList, responses=AUTHENTICATED_PROBLEMS)
async def debug_anomalies(
    session: SessionDep,
    write_rate: WriteRateDep,
    access: AccessDep,
    namespace: Annotated[Namespace | None, Query()] = None,
) -> AnomalyList:
    """Sessions recently flagged for writing faster than the write-rate threshold (every API process)."""
    access.check(namespace)
    return AnomalyList(anomalies=await service.anomalies(session, write_rate, namespace=namespace))
