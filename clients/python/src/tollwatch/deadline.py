"""The end in time of one call: what is left of its budget."""

from __future__ import annotations

import math
import time
from typing import Callable


class Deadline:
    """A budget of ``seconds`` from now, read on ``clock`` (monotonic seconds).

    ``math.inf`` is no deadline: the retry policy alone then bounds the call.
    """

    seconds: float

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not seconds > 0:
            raise ValueError("a deadline must be a positive number of seconds (math.inf for none)")
        self.seconds = seconds
        self._clock = clock
        self._ends_at = clock() + seconds

    @property
    def bounded(self) -> bool:
        """Whether there is a deadline at all."""
        return not math.isinf(self.seconds)

    def remaining(self) -> float:
        """Seconds left, never below 0; ``math.inf`` without a deadline."""
        return max(0.0, self._ends_at - self._clock())
