"""Hypothesis profiles for every suite: ``pytest --hypothesis-profile=ci|deep|dev``.

``ci`` gives the main soundness property 2,000 examples; secondary properties take a fraction of
``settings().max_examples`` so ``deep`` (50,000) scales them too. ``ci`` is derandomized (the same
examples every run, so CI is repeatable and a red build is a real regression); ``dev`` and
``deep`` draw new examples each run to keep searching, print the reproduction blob on failure,
and keep what they find in the example database so the next run replays it first. Pin what they
find with ``@example`` so ``ci`` checks it from then on.
"""

from __future__ import annotations

import types
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}

settings.register_profile("dev", max_examples=100, derandomize=False, **_COMMON)
settings.register_profile("ci", max_examples=2_000, derandomize=True, database=None, **_COMMON)
settings.register_profile("deep", max_examples=50_000, derandomize=False, **_COMMON)


# ------------------------------------------------------------------------------- test markers
# Registered in pyproject.toml; ``-m "not slow and not spark"`` is the fast inner loop (README,
# development), CI runs everything.

_SPAWNING_MODULES = ("subprocess", "multiprocessing", "concurrent.futures")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests ``spark`` (they use the ``spark`` fixture, directly, through another fixture or
    by ``request.getfixturevalue("spark")``) and ``slow`` (their code, the functions and classes of
    their own modules it reaches, or their fixtures', starts a process)."""
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        found = _reach(_roots(item))
        if "spark" in item.fixturenames or "spark" in found:
            item.add_marker(pytest.mark.spark)
        if "spawns" in found:
            item.add_marker(pytest.mark.slow)


def _roots(item: pytest.Function) -> list[object]:
    """The test function (under hypothesis's wrapper) and the functions of the fixtures it uses."""
    test = getattr(getattr(item.function, "hypothesis", None), "inner_test", item.function)
    defs = item._fixtureinfo.name2fixturedefs
    return [test, *(d.func for name in item.fixturenames for d in defs.get(name, ()))]


def _reach(roots: list[object]) -> set[str]:
    """What the code of ``roots`` does, following the names it uses to functions and classes
    defined in the same module: ``spawns`` (uses a process module) and ``spark`` (asks
    ``getfixturevalue`` for ``"spark"``)."""
    found: set[str] = set()
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, type):
            todo.extend(vars(obj).values())
            continue
        func = getattr(obj, "__func__", obj)  # staticmethod, classmethod, bound method
        func = getattr(func, "fget", func)  # property
        code, globals_ = getattr(func, "__code__", None), getattr(func, "__globals__", None)
        if code is None or globals_ is None:
            continue
        for co in _code_objects(code):
            if "getfixturevalue" in co.co_names and "spark" in co.co_consts:
                found.add("spark")
            for name in co.co_names:
                value = globals_.get(name)
                owner = getattr(value, "__module__", None) or getattr(value, "__name__", "")
                if isinstance(owner, str) and owner.startswith(_SPAWNING_MODULES):
                    found.add("spawns")
                elif owner == globals_.get("__name__") and callable(value):
                    todo.append(value)
    return found


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code of the functions, lambdas and comprehensions nested in it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)
