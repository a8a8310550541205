from datetime import datetime

from pydantic import BaseModel, Field


class Anomaly(BaseModel):
    session_id: str | None = Field(description="None: the caller's writes without a session.")
    namespace: str
    writes: int = Field(description="The most writes the session made within one minute during this burst.")
    first_seen: datetime
    last_seen: datetime


class AnomalyList(BaseModel):
    anomalies: list[Anomaly]


class Readiness(BaseModel):
    ready: bool
    database: str = Field(description="`reachable` or `unreachable`.")
    migration: str | None = Field(default=None, description="The database's migration, when reachable.")
    expected_migration: str | None = None
    detail: str | None = Field(default=None, description="Why the database could not be reached.")
