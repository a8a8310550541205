from typing import Literal

from pydantic import BaseModel, Field


class ImportResult(BaseModel):
    namespace: str
    source_namespace: str = Field(description="The namespace the file was exported from.")
    ids: Literal["keep", "new"]
    imported: dict[str, int] = Field(description="Rows written per kind.")
