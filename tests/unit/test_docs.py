"""The Python examples in the README and in public docstrings run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import langgraph_tiered_memory
from langgraph_tiered_memory import embedded, embeddings

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"```python\n(.*?)```", re.S)


def _blocks(text: str) -> list[str]:
    out = []
    for block in FENCE.findall(text):
        lines = block.splitlines()
        indent = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
        out.append("\n".join(ln[indent:] for ln in lines))
    return out


README_BLOCKS = _blocks((ROOT / "README.md").read_text())
DOC_BLOCKS = [
    (obj.__qualname__, block)
    for obj in (
        langgraph_tiered_memory.TieredMemoryStore,
        langgraph_tiered_memory.AsyncTieredMemoryStore,
        langgraph_tiered_memory.TierPolicy,
        langgraph_tiered_memory.create_forgetting_graph,
        langgraph_tiered_memory.create_summarizer_graph,
        langgraph_tiered_memory.calculate_decay,
        embeddings.LocalMiniLMEmbeddings,
    )
    for block in _blocks(obj.__doc__ or "")
]


def test_docs_have_examples() -> None:
    assert len(README_BLOCKS) >= 2
    assert {name for name, _ in DOC_BLOCKS} >= {"TieredMemoryStore", "AsyncTieredMemoryStore"}


@pytest.mark.parametrize(
    "code", README_BLOCKS, ids=[f"readme-{i}" for i in range(len(README_BLOCKS))]
)
def test_readme_examples_run(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", redis_url)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})


@pytest.mark.parametrize("name, code", DOC_BLOCKS, ids=[n for n, _ in DOC_BLOCKS])
def test_docstring_examples_run(
    name: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", redis_url)
    exec(compile(code, name, "exec"), {"__name__": "doc_example"})


def test_embedded_module_names_its_extra() -> None:
    assert "[embedded]" in (embedded.__doc__ or "")
