"""Running work on Spark executors as one job of one task per group, and its errors; counting
the jobs, stages and tasks a call runs."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from pyspark import SparkContext
from pyspark.sql import SparkSession

from index_store.errors import IndexStoreError

__all__ = [
    "MAX_FILES_PER_TASK",
    "TASKS_PER_CORE",
    "SparkBuildError",
    "SparkWork",
    "counted_work",
    "default_group_size",
    "run_job",
    "spark_context",
]

MAX_FILES_PER_TASK = 1024
TASKS_PER_CORE = 4

R = TypeVar("R")
G = TypeVar("G")


class SparkBuildError(IndexStoreError):
    """A Spark task of an index build failed for a reason other than the table's data."""


def default_group_size(spark: SparkSession, n: int) -> int:
    """About ``TASKS_PER_CORE`` tasks per core: small enough to balance, large enough to amortize."""
    cores = max(1, spark_context(spark).defaultParallelism)
    return max(1, min(MAX_FILES_PER_TASK, math.ceil(n / (cores * TASKS_PER_CORE))))


def run_job(
    spark: SparkSession,
    task: Callable[[Iterable[tuple[int, G]]], Iterator[tuple[int, R]]],
    groups: Sequence[G],
    what: str,
) -> list[R]:
    """One Spark job, one task per group; the groups' results in group order."""
    sc = spark_context(spark)
    previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(what)
    try:
        rdd = sc.parallelize(list(enumerate(groups)), len(groups))
        collected = rdd.mapPartitions(task).collect()
    except Exception as exc:
        raise SparkBuildError(f"{what} failed on Spark: {last_line(exc)}") from exc
    finally:
        sc.setLocalProperty("spark.job.description", previous)  # type: ignore[arg-type]  # None unsets it
    by_group = dict(collected)
    return [by_group[i] for i in range(len(groups))]


@dataclass
class SparkWork:
    """The Spark jobs, stages and tasks run inside ``counted_work`` (filled in when it exits):
    stages and tasks that ran, stages a job skipped (their shuffle output reused) not counted."""

    jobs: int = 0
    stages: int = 0
    tasks: int = 0
    job_ids: list[int] = field(default_factory=list)


@contextmanager
def counted_work(spark: SparkSession) -> Iterator[SparkWork]:
    """Count the Spark work the calling thread starts inside the block, through a job group of its
    own (``statusTracker().getJobIdsForGroup``): a structural measure of a call (how many jobs,
    stages and tasks it runs), for tests and benchmarks. The thread's previous job group is put back.
    """
    sc = spark_context(spark)
    group = f"hudi-index-count-{uuid.uuid4().hex}"
    previous = sc.getLocalProperty("spark.jobGroup.id")
    sc.setLocalProperty("spark.jobGroup.id", group)
    work = SparkWork()
    try:
        yield work
    finally:
        sc.setLocalProperty("spark.jobGroup.id", previous)  # type: ignore[arg-type]  # None unsets it
        tracker = sc.statusTracker()
        work.job_ids = sorted(tracker.getJobIdsForGroup(group))
        stage_ids = {s for j in work.job_ids if (job := tracker.getJobInfo(j)) for s in job.stageIds}
        ran = [info for s in stage_ids if (info := tracker.getStageInfo(s)) and info.numCompletedTasks > 0]
        work.jobs, work.stages = len(work.job_ids), len(ran)
        work.tasks = sum(info.numCompletedTasks for info in ran)


def spark_context(spark: SparkSession) -> SparkContext:
    try:
        return spark.sparkContext
    except Exception as exc:  # Spark Connect sessions have no SparkContext
        raise SparkBuildError(f"a distributed index build needs a classic Spark session: {exc}") from exc


def last_line(exc: BaseException) -> str:
    """The Python error at the bottom of a Spark failure (its message is a whole traceback)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    errors = [line for line in lines if "Error: " in line or "Exception: " in line]
    return (errors or lines or [type(exc).__name__])[-1]
