"""The backend interface: load a model, predict a batch, describe what actually ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np


class Backend(Protocol):
    """An inference engine as the harness sees it; imported only inside the worker process."""

    name: ClassVar[str]

    def load(
        self,
        model: Path,
        options: dict[str, Any],
        *,
        input_name: str | None,
        output_name: str | None,
    ) -> None:
        """Prepare the model for inference with the spec's backend options."""

    def predict(self, batch: np.ndarray) -> np.ndarray:
        """Outputs of the selected output for a batch (first axis = samples)."""

    def describe(self) -> dict[str, Any]:
        """Versions, providers, options in effect: recorded in the run."""
