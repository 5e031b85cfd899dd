"""Bad input to `tiered-memory` is one error line with exit code 2, never a traceback.

Each error is one `Error:` line on stderr, whole (naming the problem and the fix),
never a box wrapped at the console width, and nothing is written when it is refused.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.cli.app import app

runner = CliRunner()


def _run(*args: str, **kwargs: Any) -> Any:
    return runner.invoke(app, list(args), **kwargs)


def _message(result: Any) -> str:
    """The error's message: exit code 2, no traceback, stderr one `Error:` line."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return str(lines[0].removeprefix("Error: "))


@pytest.fixture
def chroma_dir(tmp_path: Path) -> str:
    path = str(tmp_path / "chroma")
    with TieredMemoryStore(chroma_path=path, tiers={"default": "long"}) as store:
        store.put(("users", "u1"), "m1", {"content": "My sister Anna lives in Porto."})
    return path


def _items(path: str) -> list[Any]:
    with TieredMemoryStore(chroma_path=path, tiers={"default": "long"}) as store:
        return store.search(("users",), limit=100)


# --------------------------------------------------------------------------- ingest


def test_ingest_names_the_line_of_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    src = tmp_path / "m.jsonl"
    src.write_bytes(b'{"content": "fine"}\n{"content": "caf\xe9"}\n')
    store = tmp_path / "chroma"
    result = _run("ingest", str(src), "--namespace", "u", "--chroma-path", str(store), "--create")
    assert _message(result) == (
        f"Invalid value: {src}:2 is not UTF-8 text (byte 17 of the line): save the file as UTF-8."
    )
    assert not store.exists()  # refused before the store was opened


@pytest.mark.parametrize("text", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
def test_ingest_of_a_file_without_memories_is_an_error_and_makes_no_store(
    text: str, tmp_path: Path
) -> None:
    src = tmp_path / "m.jsonl"
    src.write_text(text)
    store = tmp_path / "chroma"
    result = _run("ingest", str(src), "--namespace", "u", "--chroma-path", str(store), "--create")
    assert _message(result).startswith(f"Invalid value: {src} holds no memories:")
    assert not store.exists()


def test_ingest_names_the_line_of_a_lone_surrogate_escape(chroma_dir: str, tmp_path: Path) -> None:
    src = tmp_path / "m.jsonl"
    for line in ('{"content": "a \\ud800 b"}', '{"content": "ok", "key": "k", "x": ["\\udfff"]}'):
        src.write_text('{"content": "fine", "key": "f"}\n' + line + "\n")
        args = ["ingest", str(src), "--namespace", "users/u1", "--chroma-path", chroma_dir]
        message = _message(_run(*args))
        assert message.startswith(f"Invalid value: {src}:2: Value of item ")
        assert "cannot be encoded as UTF-8" in message and message.endswith(".decode('utf-8').")
    assert [i.key for i in _items(chroma_dir)] == ["m1"]  # the good first line was not written


def test_ingest_names_the_line_of_nesting_too_deep(chroma_dir: str, tmp_path: Path) -> None:
    src = tmp_path / "m.jsonl"
    args = ["ingest", str(src), "--namespace", "users/u1", "--chroma-path", chroma_dir]
    deep = '{"content": "x", "d": ' + "[" * 5000 + "]" * 5000 + "}"  # beyond json's recursion
    src.write_text('{"content": "fine"}\n' + deep + "\n")
    assert _message(_run(*args)) == (
        f"Invalid value: {src}:2 is nested too deeply to read: values may nest at most 100"
        " levels of objects and lists; flatten it, or store the deep part as a JSON string."
    )
    src.write_text('{"content": "x", "d": ' + "[" * 150 + "]" * 150 + "}\n")  # parsed, too deep
    message = _message(_run(*args))
    assert message.startswith(f"Invalid value: {src}:1: Value of item ")
    assert "nested deeper than 100 levels" in message
    assert [i.key for i in _items(chroma_dir)] == ["m1"]


def test_ingest_refuses_two_lines_with_one_key_before_writing(
    chroma_dir: str, tmp_path: Path
) -> None:
    src = tmp_path / "m.jsonl"
    src.write_text(
        '{"content": "first", "key": "k"}\n{"content": "other"}\n\n'
        '{"content": "second", "key": "k"}\n'
    )
    args = ["ingest", str(src), "--namespace", "users/u1", "--chroma-path", chroma_dir]
    assert _message(_run(*args)) == (
        f"Invalid value: {src}:4 repeats the key 'k' of line 1: the later line would"
        " overwrite the earlier one; give each line its own key, or remove one."
    )
    src.write_text('{"content": "same"}\n{"content": "same"}\n')  # hashed keys: one memory
    message = _message(_run(*args))
    assert message.startswith(f"Invalid value: {src}:2 repeats the memory of line 1 (same")
    assert message.endswith("remove the repeated line.")
    assert [i.key for i in _items(chroma_dir)] == ["m1"]  # nothing was written


def test_ingest_checks_memory_fields_of_every_line_before_writing(
    chroma_dir: str, tmp_path: Path
) -> None:
    src = tmp_path / "m.jsonl"
    src.write_text('{"content": "a"}\n{"content": "b", "importance": 7}\n')
    args = ["ingest", str(src), "--namespace", "users/u1", "--chroma-path", chroma_dir]
    message = _message(_run(*args, "--batch-size", "1"))
    assert message.startswith(f"Invalid value: {src}:2: ") and "importance" in message
    assert [i.key for i in _items(chroma_dir)] == ["m1"]


# --------------------------------------------------------------------------- namespaces


@pytest.mark.parametrize("namespace", ["users/../u2", "users/u1.x"])
def test_every_command_refuses_a_namespace_label_with_a_period(
    chroma_dir: str, tmp_path: Path, namespace: str
) -> None:
    src = tmp_path / "m.jsonl"
    src.write_text('{"content": "x"}\n')
    store = ["--chroma-path", chroma_dir]
    label = "'..'" if ".." in namespace else "'u1.x'"
    commands = [
        ("--namespace", ["ingest", str(src), "--namespace", namespace, *store]),
        ("--namespace", ["inspect", "--namespace", namespace, *store]),
        ("NAMESPACE", ["search", namespace, "porto", *store]),  # not "no memories under"
        ("--namespace", ["graph", "--namespace", namespace, *store]),
        ("--namespace", ["gc", "--namespace", namespace, "--dry-run", *store]),
        ("--template", ["erase", "--user", "u1", "--template", namespace, "--dry-run", *store]),
        ("--template", ["export", "--user", "u1", "--template", namespace, *store]),
    ]
    for option, args in commands:
        assert _message(_run(*args)) == (
            f"Invalid value: {option} {namespace!r} is not a valid namespace: Invalid"
            f" namespace label {label} in {tuple(namespace.split('/'))!r}: labels cannot"
            " contain periods ('.'). Split it into separate labels instead."
        )
    literal = _run("gc", "--label", "users", "--label", "u1.x", "--dry-run", *store)
    assert literal.exit_code == 2
    assert "labels cannot contain periods" in _message(literal)
    assert [i.key for i in _items(chroma_dir)] == ["m1"]


# --------------------------------------------------------------------------- export


def test_export_out_must_be_a_file_in_a_folder_that_exists(chroma_dir: str, tmp_path: Path) -> None:
    base = ["export", "--user", "u1", "--chroma-path", chroma_dir]
    folder = tmp_path / "exports"
    folder.mkdir()
    assert _message(_run(*base, "--out", str(folder))) == (
        f"Invalid value: --out {str(folder)!r} is a directory: give a file path in it."
    )
    missing = tmp_path / "nowhere" / "u1.json"
    assert _message(_run(*base, "--out", str(missing))) == (
        f"Invalid value: --out {str(missing)!r} is in {str(missing.parent)!r}, which is not a"
        " directory that exists: create it first, or choose another path."
    )
    assert list(folder.iterdir()) == [] and not missing.parent.exists()  # nothing written
    done = _run(*base, "--out", str(folder / "u1.json"))
    assert done.exit_code == 0, done.output
    assert json.loads((folder / "u1.json").read_text())["user_id"] == "u1"


# --------------------------------------------------------------------------- width


def test_long_messages_stay_on_one_line_off_a_terminal(tmp_path: Path) -> None:
    deep = tmp_path / ("a-long-folder-name-" * 6) / "chroma"
    result = _run("inspect", "--chroma-path", str(deep), env={"COLUMNS": "80"})
    assert _message(result) == (
        f"Invalid value: --chroma-path {str(deep)!r} does not exist: give the directory of an"
        " existing store (--chroma-path DIR or TIERED_MEMORY_CHROMA_PATH) or --chroma-host"
        " for a Chroma server."
    )
    assert not os.path.exists(deep)
    # Errors are not wrapped, but help still wraps at the console width.
    help_text = _run("inspect", "--help", env={"COLUMNS": "80"}).stdout
    assert max(len(line) for line in help_text.splitlines()) <= 80


# --------------------------------------------------------------------------- store folders


def _files(folder: str) -> dict[str, tuple[int, int]]:
    """Every file and folder under `folder`, with its size and modification time."""
    found = {}
    for path in [Path(folder), *Path(folder).rglob("*")]:
        st = path.stat()
        found[str(path.relative_to(folder))] = (st.st_size, st.st_mtime_ns)
    return found


def test_every_command_refuses_a_folder_that_holds_no_store(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("not a store\n")
    before = _files(str(folder))
    src = tmp_path / "m.jsonl"
    src.write_text('{"content": "x"}\n')
    at = ["--chroma-path", str(folder)]
    for args in (
        ["inspect", *at],
        ["search", "users", "porto", *at],
        ["graph", "--namespace", "users", *at],
        ["export", "--user", "u1", *at],
        ["erase", "--user", "u1", "--dry-run", *at],
        ["gc", "--dry-run", *at],
        ["ingest", str(src), "--namespace", "users/u1", *at],
    ):
        message = _message(_run(*args))
        assert message.startswith(f"Invalid value: --chroma-path {str(folder)!r} holds no"), args
        assert "--create" in message, args
    assert _files(str(folder)) == before  # nothing written, not even a lock file
    made = _run("ingest", str(src), "--namespace", "users/u1", *at, "--create")
    assert made.exit_code == 0, made.output
    assert (folder / "readme.txt").read_text() == "not a store\n"


def test_reading_commands_never_write_to_the_store(chroma_dir: str) -> None:
    before = _files(chroma_dir)
    at = ["--chroma-path", chroma_dir]
    for args in (
        ["inspect", *at],
        ["inspect", "--json", *at],
        ["search", "users", "porto", *at],
        ["graph", "--namespace", "users", *at],
        ["export", "--user", "u1", *at],
    ):
        result = _run(*args)
        assert result.exit_code == 0, (args, result.output)
        assert _files(chroma_dir) == before, args
    assert "Porto" in _run("search", "users", "porto", *at).stdout


def test_reading_commands_refuse_a_store_another_process_has_open(chroma_dir: str) -> None:
    """Its files may be half-written: a copy of them is not read (nor are they written)."""
    import subprocess
    import sys

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from langgraph_tiered_memory import TieredMemoryStore\n"
            f"s = TieredMemoryStore(chroma_path={chroma_dir!r}, tiers={{'default': 'long'}})\n"
            "s.get(('users', 'u1'), 'm1'); print('open', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        before = _files(chroma_dir)
        message = _message(_run("inspect", "--chroma-path", chroma_dir))
        assert "in use by another process" in message and f"pid {holder.pid}" in message
        assert _files(chroma_dir) == before
    finally:
        holder.communicate("", timeout=60)
    assert _run("inspect", "--chroma-path", chroma_dir).exit_code == 0  # closed: readable


def _embedded_store(tmp_path: Path) -> str:
    from tests.fakes import HashingEmbeddings

    path = str(tmp_path / "embedded")
    index: Any = {"dims": 16, "embed": HashingEmbeddings(16), "fields": ["content"]}
    with TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, index=index) as store:
        store.put(("users", "u1"), "m1", {"content": "My sister Anna lives in Porto."})
    return path


def test_search_without_embed_says_the_store_holds_embeddings(tmp_path: Path) -> None:
    path = _embedded_store(tmp_path)
    result = _run("search", "users", "sibling city", "--chroma-path", path)
    assert result.exit_code == 0, result.output
    assert "no memories under users match" in result.stdout
    assert "16-dimension embeddings: pass --embed" in result.stderr
    found = _run("search", "users", "porto", "--chroma-path", path)
    assert found.exit_code == 0 and "--embed with" not in found.stderr


def test_a_wrong_dims_is_one_error_line(tmp_path: Path) -> None:
    path = _embedded_store(tmp_path)
    message = _message(_run("search", "users", "porto", "--chroma-path", path, "--dims", "3"))
    assert "16 dimensions" in message


def test_graph_of_a_store_without_a_graph_says_how_to_build_one(chroma_dir: str) -> None:
    result = _run("graph", "--namespace", "users", "--chroma-path", chroma_dir)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "(no triples)"
    assert "holds no knowledge graph" in result.stderr
    assert "graph=True" in result.stderr and "rebuild_graph(store)" in result.stderr


def test_a_json_error_names_its_position(chroma_dir: str, tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text('{"content": "fine"}\n{"content": "a\tb"}\n')
    args = ["ingest", str(src), "--namespace", "users/u1", "--chroma-path", chroma_dir]
    assert _message(_run(*args)) == (
        f"Invalid value: {src}:2 is not JSON: Invalid control character at:"
        " line 1 column 15 (char 14)."
    )


def _commands(command: Any, path: tuple[str, ...] = ()) -> Any:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_help_shows_every_placeholder_as_written() -> None:
    import typer.main

    placeholder = re.compile(r"<[^<>\n]+>")
    checked = 0
    for path, command in _commands(typer.main.get_command(app)):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        wanted = {m for text in texts for m in placeholder.findall(text)}
        if not wanted:
            continue
        shown = _run(*path, "--help", env={"COLUMNS": "2000"})
        assert shown.exit_code == 0, shown.output
        flat = " ".join(shown.stdout.replace("│", " ").split())
        for text in wanted:
            assert " ".join(text.split()) in flat, (path, text)
            checked += 1
    assert checked >= 1


@pytest.mark.parametrize(
    "command",
    [["inspect"], ["search", "users/u1", "tea"], ["export", "--user", "u1"]],
    ids=["inspect", "search", "export"],
)
def test_a_chroma_server_that_does_not_answer_is_one_error_line(command: list[str]) -> None:
    from tests.net import free_port

    port = free_port()  # nothing listens there
    result = _run(*command, "--chroma-host", "127.0.0.1", "--chroma-port", str(port))
    message = _message(result)
    assert message.startswith(f"Cannot use the Chroma server at 'http://127.0.0.1:{port}'")


def test_an_invalid_redis_url_is_named_and_the_form_is_shown_unmasked(chroma_dir: str) -> None:
    result = _run("erase", "--chroma-path", chroma_dir, "--user", "u1", "--redis-url", "notaurl")
    message = _message(result)
    assert "Invalid Redis URL 'notaurl'" in message and "redis://host[:port][/db]" in message
    assert "***" not in message  # nothing secret in it, so nothing masked


def test_gc_with_an_invalid_key_prefix_is_one_error_line(chroma_dir: str) -> None:
    result = _run("gc", "--chroma-path", chroma_dir, "--key-prefix", "bad prefix!", "--dry-run")
    assert "key_prefix 'bad prefix!' is invalid" in _message(result)
