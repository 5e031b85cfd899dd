"""The Python examples in the README and in public docstrings run as written.

What counts as an example:

- README.md and the pages under docs/: every fenced block whose info string is
  ``python`` or ``py``.
- Docstrings: the same fences, and doctest (``>>>``) examples, in the docstring of every
  public module of the package and of the benchmarks' package (no ``_``-prefixed part in
  its name), of every object in
  those modules' ``__all__`` and of the public methods, properties and constructors of those
  classes (inherited ones included, when the package defines them). Nothing is listed by
  hand: a new public object's example runs without touching this file.

Each example runs twice in the same temporary working directory (users re-run them), with
``REDIS_URL`` set to the test Redis, and must execute at least one ``assert`` (a doctest
must compare at least one output), so an example that checks nothing cannot be added.

A Markdown block that cannot run in the tests opts out with the marker
``<!-- no-run: <reason> -->`` on the line right before its fence. The reason is required,
the block must still compile, and at most ``MAX_NO_RUN`` blocks of the README (and
``MAX_NO_RUN_PAGE`` of each docs page) may opt out. Docstring
examples cannot opt out.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import langgraph_tiered_memory
import tiered_memory_benchmarks
from langgraph_tiered_memory.embedded import redis as embedded

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (langgraph_tiered_memory, tiered_memory_benchmarks)
RUN_LANGUAGES = frozenset({"python", "py"})
MAX_NO_RUN = 1
MAX_NO_RUN_PAGE = 2
DOC_PAGES = sorted((ROOT / "docs").glob("*.md"))
# Floors for the number of examples found; raise them when you add examples.
MIN_README_EXAMPLES = 7
MIN_DOCSTRING_EXAMPLES = 19

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)")
NO_RUN = re.compile(r"^\s*<!--\s*no-run\s*:\s*(?P<reason>.*?)\s*-->\s*$")
NO_RUN_WORD = re.compile(r"no-run", re.I)


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, dedented code, and where it starts."""

    language: str
    code: str
    line: int  # 1-based line of the opening fence
    no_run: str | None = None  # the reason of a `<!-- no-run: ... -->` marker


@dataclass(frozen=True)
class Example:
    """One runnable example: fenced Python code, or a docstring's doctest."""

    name: str
    source: str  # file name shown in tracebacks
    code: str = ""
    doctest: doctest.DocTest | None = field(default=None, compare=False)
    no_run: str | None = None


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text (or docstring), in order.

    Raises:
        ValueError: A fence is never closed.
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        end = i + 1
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        if end == len(lines):
            raise ValueError(f"the fence opened on line {i + 1} is never closed")
        body = [_strip_indent(line, indent) for line in lines[i + 1 : end]]
        previous = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        marker = NO_RUN.match(previous)
        no_run = marker["reason"] if marker else None
        blocks.append(Block(opening["info"].lower(), "\n".join(body) + "\n", i + 1, no_run))
        i = end + 1
    return blocks


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def _strip_indent(line: str, indent: int) -> str:
    cut = 0
    while cut < indent and cut < len(line) and line[cut] in " \t":
        cut += 1
    return line[cut:]


# ------------------------------------------------------------------ discovery


def public_modules() -> list[ModuleType]:
    """The packages and every submodule with no `_`-prefixed part in its name."""
    modules = list(PACKAGES)
    for package in PACKAGES:
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                modules.append(importlib.import_module(info.name))
    return modules


def _ours(obj: Any) -> bool:
    return str(getattr(obj, "__module__", None) or "").split(".")[0] in {
        p.__name__ for p in PACKAGES
    }


def _function(attr: Any) -> Any:
    """The function behind a class attribute, or None for a plain value."""
    if isinstance(attr, (staticmethod, classmethod)):
        attr = attr.__func__
    if isinstance(attr, property):
        attr = attr.fget
    attr = inspect.unwrap(attr) if callable(attr) else attr
    return attr if inspect.isfunction(attr) else None


def public_objects() -> Iterator[tuple[str, Any]]:
    """(qualified name, object) of every documented public object, each object once."""
    seen: set[int] = set()

    def first(obj: Any) -> bool:
        new = id(obj) not in seen
        seen.add(id(obj))
        return new

    for module in public_modules():
        if first(module):
            yield module.__name__, module
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not _ours(obj):
                continue
            if first(obj):
                yield f"{obj.__module__}.{obj.__qualname__}", obj
            if not inspect.isclass(obj):
                continue
            for klass in obj.__mro__:
                if not _ours(klass):
                    continue
                for attr_name, attr in vars(klass).items():
                    public = not attr_name.startswith("_") or attr_name in ("__init__", "__call__")
                    function = _function(attr) if public else None
                    if function is not None and _ours(function) and first(function):
                        yield f"{function.__module__}.{function.__qualname__}", function


def docstring_examples() -> list[Example]:
    """The fenced Python and doctest examples of every public object's docstring."""
    examples: list[Example] = []
    parser = doctest.DocTestParser()
    for name, obj in public_objects():
        doc = inspect.cleandoc(obj.__doc__ or "")  # its own: getdoc would inherit upstream's
        if not doc:
            continue
        source = inspect.getsourcefile(obj) or name
        blocks = [b for b in fenced_blocks(doc) if b.language in RUN_LANGUAGES]
        for n, block in enumerate(blocks):
            label = name if len(blocks) == 1 else f"{name}[{n}]"
            examples.append(Example(label, f"{source} ({name})", block.code))
        if ">>>" in doc:
            test = parser.get_doctest(doc, {}, name, source, 0)
            examples.append(Example(f"{name}[doctest]", source, doctest=test))
    return examples


def readme_examples() -> list[Example]:
    """Every ```python / ```py block of README.md and of the docs pages."""
    out: list[Example] = []
    for path in [ROOT / "README.md", *DOC_PAGES]:
        name = path.relative_to(ROOT).as_posix()
        out.extend(
            Example(f"{name}:{b.line}", f"{name}:{b.line}", b.code, no_run=b.no_run)
            for b in fenced_blocks(path.read_text(encoding="utf-8"))
            if b.language in RUN_LANGUAGES
        )
    return out


# ------------------------------------------------------------------ running


class _CountAsserts(ast.NodeTransformer):
    """Put `__asserts_run__.append(1)` before every `assert`, line numbers unchanged."""

    def visit_Assert(self, node: ast.Assert) -> list[ast.stmt]:
        count = ast.parse("__asserts_run__.append(1)").body[0]
        return [ast.copy_location(count, node), node]


def compile_example(code: str, source: str) -> Any:
    """Compile an example as a module of its own, with assert counting.

    `dont_inherit=True` keeps this file's `from __future__ import annotations` out of the
    example: inherited, it hides annotations that fail at run time (`x: Undefined = ...`).
    """
    tree = ast.fix_missing_locations(_CountAsserts().visit(ast.parse(code, source)))
    return compile(tree, source, "exec", dont_inherit=True)


def run_example(example: Example) -> None:
    """Run an example once; fail if it raises or runs no assert (or doctest comparison)."""
    if example.doctest is not None:
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        test = example.doctest
        test.globs = {"__name__": "doc_example"}
        result = runner.run(test, clear_globs=True)
        assert result.failed == 0, f"{example.name}: {result.failed} doctest example(s) failed"
        assert any(ex.want.strip() or "assert" in ex.source for ex in test.examples), (
            f"{example.name} checks nothing: compare an output or assert"
        )
        return
    asserts_run: list[int] = []
    namespace = {"__name__": "doc_example", "__asserts_run__": asserts_run}
    exec(compile_example(example.code, example.source), namespace)
    assert asserts_run, f"{example.name} ran no assert: end it with one on what it produced"


README_EXAMPLES = readme_examples()
DOC_EXAMPLES = docstring_examples()


@pytest.fixture
def example_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str) -> Path:
    """A temporary working directory, and `REDIS_URL` naming the test Redis."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", redis_url)
    return tmp_path


@pytest.mark.parametrize("example", README_EXAMPLES, ids=[e.name for e in README_EXAMPLES])
def test_readme_example_runs_twice(example: Example, example_env: Path) -> None:
    if example.no_run is not None:
        compile_example(example.code, example.source)  # it must at least be valid Python
        pytest.skip(f"marked no-run: {example.no_run}")
    run_example(example)
    run_example(example)  # users re-run examples in the same directory
    assert sorted(p.name for p in example_env.iterdir()) == [], "use a temporary folder"


@pytest.mark.parametrize("example", DOC_EXAMPLES, ids=[e.name for e in DOC_EXAMPLES])
def test_docstring_example_runs_twice(example: Example, example_env: Path) -> None:
    run_example(example)
    run_example(example)
    assert sorted(p.name for p in example_env.iterdir()) == [], "use a temporary folder"


TESTS_IMPORT = re.compile(r"^\s*(?:>>>\s*|\.\.\.\s*)?(?:from|import)\s+tests\b", re.M)
"""An import of this repository's `tests` package, which an installed wheel lacks."""


def test_no_example_imports_the_test_suite() -> None:
    texts = {p.name: p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *DOC_PAGES]}
    texts.update({name: inspect.cleandoc(obj.__doc__ or "") for name, obj in public_objects()})
    assert len(texts) > len(DOC_PAGES) + 1
    assert TESTS_IMPORT.search("x = 1\nfrom tests.fakes import HashingEmbeddings\n")
    offenders = sorted(name for name, text in texts.items() if TESTS_IMPORT.search(text))
    assert offenders == [], "examples must run from an installed wheel: do not import tests"


def test_examples_cannot_silently_drop_out() -> None:
    assert len(README_EXAMPLES) >= MIN_README_EXAMPLES
    assert len(DOC_EXAMPLES) >= MIN_DOCSTRING_EXAMPLES
    names = {e.name for e in DOC_EXAMPLES}
    for expected in (
        "langgraph_tiered_memory.config.TierPolicy",
        "langgraph_tiered_memory.config.ScoringConfig",
        "langgraph_tiered_memory.agent.summarizer.summarize_messages",
        "langgraph_tiered_memory.checkpoint.sync.RedisSessionSaver",
        "langgraph_tiered_memory.checkpoint.aio.AsyncRedisSessionSaver",
        "langgraph_tiered_memory.store.sync.TieredMemoryStore",
    ):
        assert expected in names


SERVER_TIMEOUTS = {"EmbeddedFalkorDB": "startup_timeout", "FalkorDBGraph": "timeout"}
"""The servers a docstring example starts, and the option that bounds its waits."""


def test_docstring_examples_give_their_servers_generous_timeouts() -> None:
    """The suite runs them on loaded machines: a default timeout once failed an example."""
    checked = 0
    for example in DOC_EXAMPLES:
        for call in ast.walk(ast.parse(example.code)):
            name = getattr(getattr(call, "func", None), "id", None)
            if isinstance(call, ast.Call) and name in SERVER_TIMEOUTS:
                given = {k.arg: k.value for k in call.keywords}
                wait = given.get(SERVER_TIMEOUTS[name])
                assert isinstance(wait, ast.Constant) and wait.value >= 60, (example.name, name)
                checked += 1
    assert checked >= 4


def test_discovery_reaches_submodules_and_methods() -> None:
    names = {name for name, _ in public_objects()}
    assert {
        "langgraph_tiered_memory.embedded.redis",
        "langgraph_tiered_memory.checkpoint.saver",
        "tiered_memory_benchmarks.store",
        "langgraph_tiered_memory.agent.summarizer.summarize_messages",
        "langgraph_tiered_memory.config.ScoringConfig",
        "langgraph_tiered_memory.store.sync.TieredMemoryStore.search_memories",
        "langgraph_tiered_memory.checkpoint._session._SyncSessionLayer.from_conn_string",
        "langgraph_tiered_memory.embedded.redis.EmbeddedRedis.url",
    } <= names


@pytest.mark.parametrize(
    "path", [ROOT / "README.md", *DOC_PAGES], ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_markdown_opts_out_only_with_a_reasoned_marker(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    blocks = fenced_blocks(text)
    assert all(b.language for b in blocks), f"give every fence of {path.name} a language"
    marked = [b for b in blocks if b.no_run is not None]
    assert all(b.language in RUN_LANGUAGES and b.no_run for b in marked)
    assert len(marked) <= (MAX_NO_RUN if path.name == "README.md" else MAX_NO_RUN_PAGE)
    # a misspelt or misplaced marker would silently do nothing: every mention is one of these
    assert len(NO_RUN_WORD.findall(text)) == len(marked)


def test_the_docs_pages_are_found() -> None:
    assert "agent.md" in {p.name for p in DOC_PAGES}


def test_docstrings_show_python_only_in_checked_fences() -> None:
    """A reST `::` literal block holding Python would be an example no test runs."""
    for name, obj in public_objects():
        doc = inspect.cleandoc(obj.__doc__ or "")
        assert all(b.language for b in fenced_blocks(doc)), f"{name}: a fence has no language"
        for literal in re.findall(r"::\n\n((?:[ \t]+.*\n|\n)+)", doc + "\n"):
            try:
                ast.parse(inspect.cleandoc(literal))
            except SyntaxError:
                continue
            pytest.fail(f"{name} shows Python in a `::` block; use a ```python fence")


# ------------------------------------------------------------------ the runner itself


def _example(code: str) -> Example:
    return Example("probe", "probe.py", textwrap.dedent(code))


def test_runner_fails_an_example_whose_annotation_is_undefined() -> None:
    with pytest.raises(NameError, match="Undefined"):
        run_example(_example("x: Undefined = 1\nassert x == 1"))


def test_runner_fails_an_example_that_asserts_nothing() -> None:
    with pytest.raises(AssertionError, match="ran no assert"):
        run_example(_example("print('hello')"))
    with pytest.raises(AssertionError, match="ran no assert"):
        run_example(_example("def check() -> None:\n    assert False\n"))  # never called


def test_runner_runs_doctests_and_fails_wrong_output() -> None:
    parser = doctest.DocTestParser()
    good = parser.get_doctest(">>> 1 + 1\n2\n", {}, "good", "good.py", 0)
    run_example(Example("good", "good.py", doctest=good))
    bad = parser.get_doctest(">>> 1 + 1\n3\n", {}, "bad", "bad.py", 0)
    with pytest.raises(AssertionError, match="failed"):
        run_example(Example("bad", "bad.py", doctest=bad))


def test_fences_are_found_in_every_form() -> None:
    doc = inspect.cleandoc(
        """Intro.

        Example:
            ```python
            if True:
                x = 1
            ```

        ```py
        y = 2
        ```

        <!-- no-run: needs a server -->
        ```python
        z = 3
        ```

        ```bash
        echo hi
        ```
        """
    )
    blocks = fenced_blocks(doc)
    assert [(b.language, b.code, b.no_run) for b in blocks] == [
        ("python", "if True:\n    x = 1\n", None),
        ("py", "y = 2\n", None),
        ("python", "z = 3\n", "needs a server"),
        ("bash", "echo hi\n", None),
    ]
    with pytest.raises(ValueError, match="never closed"):
        fenced_blocks("```python\nx = 1\n")


def test_embedded_module_names_its_extra() -> None:
    assert "[embedded]" in (embedded.__doc__ or "")
