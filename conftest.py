"""Hypothesis profiles for every suite: ``pytest --hypothesis-profile=ci|deep|dev``.

``ci`` gives the main soundness property 2,000 examples; secondary properties take a fraction of
``settings().max_examples`` so ``deep`` (50,000) scales them too. ``ci`` is derandomized (the same
examples every run, so CI is repeatable and a red build is a real regression); ``dev`` and
``deep`` draw new examples each run to keep searching, print the reproduction blob on failure,
and keep what they find in the example database so the next run replays it first. Pin what they
find with ``@example`` so ``ci`` checks it from then on.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}

settings.register_profile("dev", max_examples=100, derandomize=False, **_COMMON)
settings.register_profile("ci", max_examples=2_000, derandomize=True, database=None, **_COMMON)
settings.register_profile("deep", max_examples=50_000, derandomize=False, **_COMMON)
