"""Every code block of README.md runs, as a user would run it.

The ```python and ```bash blocks run in README order, in one working folder where the tables the
README names exist (``warehouse/orders`` and ``warehouse/lineitem``: TPC-H at SF 0.01 from
``tpchgen-cli``, laid out as the demo lays them out), so a block sees what the blocks above it did
(the indexes they built). Each Python block runs in a namespace of its own: it must show its own
imports. A block that uses ``spark`` without defining it gets the session's Spark fixture. Bash
blocks run through ``bash -e`` with this environment's ``hudi-index`` first on ``PATH``; their
commands must be ``hudi-index`` commands, optionally piped through ``SHELL_TOOLS`` (a new kind of
command fails here until this file learns to run it), except the two set-up commands, which are not
run here: ``bash scripts/test.sh`` is what CI runs (this file runs inside it), and ``bash
scripts/demo.sh`` installs the locked environment and generates SF 0.5 data, too slow for a test.
Blocks tagged ``text`` are output and are not run; a block with any other tag (or none) fails
``test_every_block_has_a_known_kind``.

A failure names the block by its first line and its line in README.md; Python tracebacks point at
README.md lines.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shlex
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from index_store.datagen.tpch import generate, write_files

README = Path(__file__).resolve().parent.parent / "README.md"
KINDS = {"python", "bash", "text"}
# Set-up commands of the README that this file does not run (see the module docstring).
SETUP_COMMANDS = {"bash scripts/demo.sh", "bash scripts/test.sh"}
SCALE = 0.01


@dataclass(frozen=True)
class Block:
    """A fenced code block of README.md: its tag, its code and the README line of its first line."""

    kind: str
    code: str
    line: int

    @property
    def first(self) -> str:
        return next((s.strip() for s in self.code.splitlines() if s.strip()), "")

    @property
    def name(self) -> str:
        return f"README.md line {self.line}: {self.first!r}"


def read_blocks(text: str) -> list[Block]:
    """The fenced blocks of ``text``, in order."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^```(.*)$", lines[i])
        if opening is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"README.md line {i + 1}: a code block that is never closed"
        blocks.append(Block(opening.group(1).strip(), "\n".join(lines[i + 1 : end]) + "\n", i + 2))
        i = end + 1
    return blocks


BLOCKS = read_blocks(README.read_text(encoding="utf-8"))
RUN = [b for b in BLOCKS if b.kind in ("python", "bash")]


def test_every_block_has_a_known_kind() -> None:
    unknown = [f"{b.name} is tagged {b.kind!r}" for b in BLOCKS if b.kind not in KINDS]
    assert not unknown, (
        "tag README code blocks python or bash (they are run) or text (output, not run):\n"
        + "\n".join(unknown)
    )
    assert sum(b.kind == "python" for b in BLOCKS) >= 4 and sum(b.kind == "bash" for b in BLOCKS) >= 2


# ------------------------------------------------------------------------------------ the tables


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``warehouse/lineitem`` (20 files by ship date) and ``warehouse/orders``
    (10 files by order date): TPC-H SF 0.01, the demo's layout at a smaller size."""
    source = generate(SCALE, tmp_path_factory.mktemp("tpch"))
    work = tmp_path_factory.mktemp("readme")
    write_files(source["lineitem"], work / "warehouse" / "lineitem", 20, order_by="l_shipdate")
    write_files(source["orders"], work / "warehouse" / "orders", 10, order_by="o_orderdate")
    return work


# ------------------------------------------------------------------------------------ running


def _uses_spark(code: str) -> bool:
    """Whether ``code`` reads a variable ``spark`` that it does not define."""
    tree = ast.parse(code)
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "spark"]
    return any(isinstance(n.ctx, ast.Load) for n in names) and not any(
        isinstance(n.ctx, ast.Store) for n in names
    )


@contextlib.contextmanager
def _spark_in(spark: Any, folder: Path) -> Iterator[None]:
    """Spark resolving relative paths from ``folder``, as it does from the folder it was started in.

    The tests share one Spark session, started in another folder; its Hadoop file system's working
    directory is what ``spark.read.parquet("warehouse/lineitem")`` is relative to."""
    jvm = spark.sparkContext._jvm
    fs = jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark.sparkContext._jsc.hadoopConfiguration())
    before = fs.getWorkingDirectory()
    fs.setWorkingDirectory(jvm.org.apache.hadoop.fs.Path(folder.as_uri()))
    try:
        yield
    finally:
        fs.setWorkingDirectory(before)


def _run_python(block: Block, folder: Path, request: pytest.FixtureRequest) -> None:
    # Compiled against README.md with the block's line offset: tracebacks show README lines.
    code = compile("\n" * (block.line - 1) + block.code, str(README), "exec")
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    spark_context: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if _uses_spark(block.code):
        namespace["spark"] = request.getfixturevalue("spark")
        spark_context = _spark_in(namespace["spark"], folder)
    failure = None
    with contextlib.chdir(folder), spark_context:
        try:
            exec(code, namespace)
        except Exception as exc:
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(README)]
            where = f" (at README.md line {frames[-1].lineno}: {frames[-1].line!r})" if frames else ""
            failure = f"{block.name} failed{where}:\n{''.join(traceback.format_exception(exc))}"
    if failure is not None:  # raised here, not in the handler: one message, not a chain of two
        pytest.fail(failure, pytrace=False)


def bash_commands(code: str) -> list[str]:
    """The commands of a bash block (continuations joined, comments dropped, split at ``;``,
    ``&&``, ``||``, ``|`` and ``&``), each as its words joined by one space."""
    commands: list[list[str]] = []
    for line in code.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.wordchars += ",:@+%"
        commands.append([])
        for token in lexer:
            if token.strip(";&|"):
                commands[-1].append(token)
            else:
                commands.append([])
    return [" ".join(c) for c in commands if c]


# Plain shell tools a README example may pipe hudi-index through (they need nothing installed).
SHELL_TOOLS = ("echo ", "wc ", "head ", "xargs ")


def _run_bash(block: Block, folder: Path) -> None:
    commands = bash_commands(block.code)
    if commands and all(c in SETUP_COMMANDS for c in commands):
        pytest.skip(f"{block.name}: set-up commands, not run here (see the module docstring)")
    other = [c for c in commands if not c.startswith(("hudi-index ", *SHELL_TOOLS))]
    if other:
        pytest.fail(f"{block.name}: this test runs only hudi-index commands, not {other}", pytrace=False)
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "hudi-index").is_file():
        pytest.fail(f"no hudi-index next to {sys.executable}: install the project", pytrace=False)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if run.returncode != 0 or "Traceback" in run.stderr:
        pytest.fail(
            f"{block.name} failed (exit {run.returncode}):\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}",
            pytrace=False,
        )


@dataclass
class Walkthrough:
    """The README's blocks run in order in one folder; running one runs the blocks above it first."""

    folder: Path
    done: dict[int, BaseException | None] = field(default_factory=dict)  # index in RUN -> failure

    def run(self, index: int, request: pytest.FixtureRequest) -> None:
        for i in range(index):
            if i not in self.done:
                with contextlib.suppress(BaseException):
                    self._run_one(i, request)
        failed = [RUN[i].name for i in range(index) if self.done[i] is not None]
        # Run it all the same: a block that does not need the failed ones passes.
        try:
            self._run_one(index, request)
            return
        except pytest.fail.Exception as exc:
            if not failed:
                raise
            msg = f"{exc.msg}\n(blocks above it failed too, which may be the cause: {failed})"
        pytest.fail(msg, pytrace=False)

    def _run_one(self, index: int, request: pytest.FixtureRequest) -> None:
        block = RUN[index]
        try:
            if block.kind == "python":
                _run_python(block, self.folder, request)
            else:
                _run_bash(block, self.folder)
        except pytest.skip.Exception:
            self.done[index] = None
            raise
        except BaseException as exc:
            self.done[index] = exc
            raise
        self.done[index] = None


@pytest.fixture(scope="module")
def walkthrough(workdir: Path) -> Walkthrough:
    return Walkthrough(workdir)


def _id(block: Block) -> str:
    words = re.sub(r"[^A-Za-z0-9_.-]+", "-", block.first).strip("-")[:40]
    return f"L{block.line}-{block.kind}-{words}"


@pytest.mark.parametrize("index", range(len(RUN)), ids=[_id(b) for b in RUN])
def test_readme_block_runs(index: int, walkthrough: Walkthrough, request: pytest.FixtureRequest) -> None:
    walkthrough.run(index, request)


# ---------------------------------------------------------------------------- the checker itself


def test_read_blocks_and_commands() -> None:
    text = "intro\n```python\nx = 1\n\ny = 2\n```\n\n```text\nout\n```\n```bash\na; b  # c\n```\n"
    blocks = read_blocks(text)
    assert [(b.kind, b.line, b.first) for b in blocks] == [
        ("python", 3, "x = 1"),
        ("text", 9, "out"),
        ("bash", 12, "a; b  # c"),
    ]
    script = (
        "bash scripts/demo.sh    # the demo\n                        # (more)\n"
        "hudi-index sync t;  hudi-index stats t\n"
        "hudi-index query t --explain \\\n  \"SELECT count(*) FROM t WHERE s = 'a;b'\"\n"
    )
    assert bash_commands(script) == [
        "bash scripts/demo.sh",
        "hudi-index sync t",
        "hudi-index stats t",
        "hudi-index query t --explain SELECT count(*) FROM t WHERE s = 'a;b'",
    ]
    assert _uses_spark("df = spark.read.parquet('x')")
    assert not _uses_spark("spark = make()\nspark.stop()")
    assert not _uses_spark("import duckdb")
