"""Execute every notebook in notebooks/ with nbclient, offline, and check what it promises.

Each notebook runs in a fresh kernel of this interpreter, with `REDIS_URL` set to the
session's Redis, no `OPENAI_API_KEY` (so the scripted models answer), and the notebooks
directory as its working directory. Any cell error fails the test. The notebooks'
committed outputs are not compared (timings and memory addresses may differ); what is
checked is that each run produces the images and tables the notebook is about.
"""

from __future__ import annotations

from pathlib import Path

import ipykernel  # noqa: F401 - the kernel the notebooks run in (dev extra)
import matplotlib  # noqa: F401 - the notebooks plot (dev extra)
import nbclient
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CELL_TIMEOUT = 300  # seconds per cell; a loaded CI machine is slow to load the embedder

# notebook -> (PNG images at least, HTML tables at least, Mermaid charts at least)
PROMISED = {
    "01_quickstart.ipynb": (0, 4, 0),
    "02_sessions_and_summarizer.ipynb": (1, 1, 0),
    "03_ranking.ipynb": (3, 3, 0),
    "04_forgetting.ipynb": (1, 3, 0),
    "05_knowledge_graph.ipynb": (0, 2, 1),
}


def _outputs(nb: object) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]  # type: ignore[attr-defined]


def _count(nb: object) -> tuple[int, int, int]:
    data = [o.get("data", {}) for o in _outputs(nb)]
    images = sum("image/png" in d for d in data)
    tables = sum("<table" in str(d.get("text/html", "")) for d in data)
    charts = sum(str(d.get("text/markdown", "")).startswith("```mermaid") for d in data)
    return images, tables, charts


def test_every_notebook_is_listed() -> None:
    found = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert found == sorted(PROMISED), "add new notebooks to PROMISED (and notebooks/README.md)"
    readme = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    assert all(name in readme for name in found)


def test_the_commands_the_notebooks_readme_gives_are_installed() -> None:
    """`jupyter lab`, `jupyter execute`, `jupyter nbconvert`: the notebooks extra's."""
    import re
    import subprocess
    import sys

    readme = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    commands = sorted(set(re.findall(r"\.venv/bin/jupyter ([a-z]+) ", readme)))
    assert {"lab", "execute", "nbconvert"} <= set(commands), commands
    jupyter = Path(sys.executable).with_name("jupyter")
    for command in commands:
        done = subprocess.run(
            [str(jupyter), command, "--help"], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (command, done.stderr[-2000:])


def test_committed_outputs_show_what_a_user_without_the_data_sees() -> None:
    """The LoCoMo file is not shipped: the saved ranking figures come from the sample."""
    nb = nbformat.read(NOTEBOOKS / "03_ranking.ipynb", as_version=4)
    printed = "".join(str(o.get("text", "")) for o in _outputs(nb))
    assert "built-in sample: 16 turns" in printed and "LoCoMo dev," not in printed


@pytest.mark.parametrize("name", sorted(PROMISED))
def test_committed_outputs(name: str) -> None:
    """The files carry their outputs, so they read on GitHub without running them."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert not [o for o in _outputs(nb) if o.get("output_type") == "error"]
    images, tables, charts = _count(nb)
    want = PROMISED[name]
    assert images >= want[0] and tables >= want[1] and charts >= want[2], (images, tables, charts)


@pytest.mark.parametrize("name", sorted(PROMISED))
def test_notebook_executes(name: str, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    assert not [o for o in _outputs(nb) if o.get("output_type") == "error"]
    images, tables, charts = _count(nb)
    want = PROMISED[name]
    assert images >= want[0], f"{name}: {images} images, promised {want[0]}"
    assert tables >= want[1], f"{name}: {tables} tables, promised {want[1]}"
    assert charts >= want[2], f"{name}: {charts} Mermaid charts, promised {want[2]}"
    assert "Redis: REDIS_URL" in "".join(
        o.get("text", "") for o in _outputs(nb) if o.get("output_type") == "stream"
    ), "the notebook must use REDIS_URL when it is set"
