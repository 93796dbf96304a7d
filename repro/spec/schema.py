"""The published JSON Schema of the experiment spec, generated from the pydantic models."""

from __future__ import annotations

import json
from typing import Any

from repro.spec.models import SCHEMA_V1, ExperimentSpec

SCHEMA_URI = "https://repro.dev/schemas/experiment-v1.schema.json"
COMMITTED_PATH = "specs/schema/experiment-v1.schema.json"


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of `repro.experiment/v1`."""
    schema = ExperimentSpec.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_URI,
        "title": f"repro experiment spec ({SCHEMA_V1})",
        **schema,
    }


def schema_text() -> str:
    """The schema as committed: indented, sorted keys, trailing newline."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
