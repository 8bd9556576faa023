"""Array types the planner's modules share."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

# Index arrays: int32 from the model, int64 from numpy index functions; both are fine.
Ints = npt.NDArray[np.signedinteger[Any]]
