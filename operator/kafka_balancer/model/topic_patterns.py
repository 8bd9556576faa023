"""Topic name patterns (ResourceGroup ``topics.patterns``), matched in time linear in the topic name.

Patterns use RE2 syntax (https://github.com/google/re2/wiki/Syntax) and are matched by RE2, never by
Python's backtracking ``re``: with ``re`` a pattern such as ``(a+)+b`` takes about 2^n steps on a
topic of n ``a``s and holds the GIL the whole time, which stops every thread of the operator. RE2
has no backtracking, so the features that need it (backreferences, look-around) are refused when
the pattern is validated, with the reason. Each pattern is bounded in length, its compiled program
in memory, and a topic name is at most 249 characters: one match is microseconds.

The CRD model (:class:`kafka_balancer.model.policy.resource_group.TopicSelector`) and the planner's
:class:`kafka_balancer.planner.options.GroupOptions` both match through :func:`matches_any`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, Final

import re2

MAX_PATTERN_LENGTH: Final = 1000
MAX_PATTERNS: Final = 100  # per group: the matching work is topics x patterns
_PROGRAM_BYTES: Final = 1 << 20  # RE2's memory budget for one compiled pattern (its default is 8 MiB)


class PatternError(ValueError):
    """A pattern RE2 cannot compile, or one over the length limit; the message says why."""


def _options() -> Any:
    options = re2.Options()
    options.max_mem = _PROGRAM_BYTES
    options.log_errors = False  # the error is raised (and reported by the caller), not logged to stderr
    options.never_capture = True  # only whether it matches counts
    return options


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """The compiled pattern; PatternError when it is too long or not linear-time RE2."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"{len(pattern)} characters long; at most {MAX_PATTERN_LENGTH} are allowed")
    try:
        return re2.compile(pattern, _options())
    except re2.error as err:
        detail = err.args[0].decode(errors="replace") if err.args and isinstance(err.args[0], bytes) else str(err)
        raise PatternError(
            f"not a valid RE2 regular expression ({detail}): patterns are matched by RE2 in linear"
            " time, so backreferences and look-around are not supported"
        ) from None


def matches_any(patterns: Iterable[str], topic: str) -> bool:
    """Whether any pattern matches the whole topic name."""
    return any(compile_pattern(p).fullmatch(topic) is not None for p in patterns)
