"""Hypothesis profiles for every suite: ``pytest --hypothesis-profile=ci|deep|dev``.

``ci`` gives the main soundness property 2,000 examples; secondary properties take a fraction of
``settings().max_examples`` so ``deep`` (50,000) scales them too. Runs are random (not
derandomized); a failure prints the reproduction blob and the seed, and lands in the example
database so the next run replays it first.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
    "derandomize": False,
}

settings.register_profile("dev", max_examples=100, **_COMMON)
settings.register_profile("ci", max_examples=2_000, **_COMMON)
settings.register_profile("deep", max_examples=50_000, **_COMMON)
