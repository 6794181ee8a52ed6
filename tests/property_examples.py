"""How many examples a Hypothesis property test draws, by profile.

``quick`` (the default, what ``./dev.sh test`` runs) draws a third of each test's thorough
count: the same properties on fewer generated inputs, so the suite stays within its few
minutes on two cores. ``LITMUS_HYPOTHESIS_PROFILE=thorough`` draws every example (before a
release, or after changing the code a property covers); a failure in either profile is
reproducible (the file-sized tests are derandomized, the others keep Hypothesis's database).

A test that also asserts a floor on what its examples exercised (records seen, batches
handed out) states the floor for the thorough count and asserts :func:`floor_for` of it.
"""

from __future__ import annotations

import math
import os

PROFILE_ENV = "LITMUS_HYPOTHESIS_PROFILE"
SHARE_OF_EXAMPLES = {"quick": 1 / 3, "thorough": 1.0}


def _share() -> float:
    profile = os.environ.get(PROFILE_ENV, "quick")
    if profile not in SHARE_OF_EXAMPLES:
        raise ValueError(f"{PROFILE_ENV}={profile!r}: expected one of {sorted(SHARE_OF_EXAMPLES)}")
    return SHARE_OF_EXAMPLES[profile]


SHARE = _share()


def examples(thorough: int) -> int:
    """The examples to draw now, of ``thorough`` in the thorough profile (at least one)."""
    return max(1, math.ceil(thorough * SHARE))


def floor_for(floor: int, thorough: int) -> int:
    """``floor`` (met by ``thorough`` examples), in proportion to the examples drawn now."""
    return math.ceil(floor * examples(thorough) / thorough)
