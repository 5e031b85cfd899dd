"""`tiered-memory studio`: LangGraph Studio on the tiered store, in one command.

It starts the bundled Redis with RediSearch and RedisJSON (`EmbeddedRedis`; `REDIS_URL`
instead when it is set), runs `langgraph dev --no-browser --no-reload` on a
`langgraph.json` with `REDIS_URL` pointing at it, prints the Studio URL once the server
answers, and on Ctrl-C (SIGINT) or SIGTERM stops the server's process group and the
Redis it started. The server runs without LangSmith tracing, analytics or version
checks unless the environment says otherwise.

`--no-reload`: under uvicorn's reloader a server whose factories fail at start-up
(`make_store`, `make_checkpointer`) logs "Application startup failed. Exiting." and then
waits for a source file to change, so it never exits. Without it, `langgraph dev` exits
with code 3, and so does this command, with its log above the error.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from langgraph_tiered_memory.cli.common import fail

__all__ = ["studio"]

STUDIO_URL = "https://smith.langchain.com/studio/?baseUrl={api}"
"""Where Studio's web app reaches a local server (it runs in the browser)."""
_OFFLINE = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
}
_STOP_SECONDS = 20.0


def _langgraph() -> str:
    """The `langgraph` executable beside this interpreter, or on PATH."""
    beside = Path(sys.executable).with_name("langgraph")
    found = str(beside) if beside.exists() else shutil.which("langgraph")
    if found is None:
        fail(
            "`langgraph` (the LangGraph CLI) is not installed: pip install 'langgraph-cli[inmem]'."
        )
    return found


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _stop(process: "subprocess.Popen[bytes]") -> None:
    """Stop `langgraph dev` and everything in its process group: SIGINT, then SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=_STOP_SECONDS)
            break
        except subprocess.TimeoutExpired:
            continue
    # The server's workers may outlive it in its group for a moment.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _up(api: str, process: "subprocess.Popen[bytes]") -> bool:
    """Wait until the server answers `/ok` (True) or exits (False)."""
    while process.poll() is None:
        try:
            with urllib.request.urlopen(f"{api}/ok", timeout=2.0) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)  # the server signals readiness only on its health endpoint
    return False


def studio(
    config: Annotated[
        Path,
        typer.Option(help="The langgraph.json to serve (its graphs, store and checkpointer)."),
    ] = Path("langgraph.json"),
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port of the API server.")] = 2024,
    host: Annotated[str, typer.Option(help="Interface the API server binds.")] = "127.0.0.1",
) -> None:
    """Serve LangGraph Studio on the tiered store: Redis, then `langgraph dev`.

    Starts the bundled Redis with RediSearch and RedisJSON (or uses REDIS_URL when it
    is set), runs `langgraph dev --no-browser --no-reload` on `--config` with REDIS_URL
    set, and prints the Studio URL. Ctrl-C stops the server and the Redis it started.
    Needs the `embedded` extra (without REDIS_URL) and `langgraph-cli[inmem]`.
    """
    from langgraph_tiered_memory.embedded.redis import EmbeddedRedisError, redis_url_or_embedded
    from langgraph_tiered_memory.privacy._redact import mask_url

    if not config.is_file():
        raise typer.BadParameter(
            f"{str(config)!r} is not a file: run the command in a directory with a"
            " langgraph.json (such as the repository's root) or pass --config PATH.",
            param_hint="--config",
        )
    langgraph = _langgraph()
    api = f"http://{host}:{port}"
    # SIGINT too: a shell starts a background command with SIGINT ignored.
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with ExitStack() as stack:
            embedded = not os.environ.get("REDIS_URL")
            try:
                redis_url = stack.enter_context(redis_url_or_embedded())
            except EmbeddedRedisError as e:
                fail(str(e))
            where = "the bundled Redis" if embedded else "REDIS_URL"
            typer.echo(f"Redis ({where}): {mask_url(redis_url)}")
            env = {**_OFFLINE, **os.environ, "REDIS_URL": redis_url}
            command = [langgraph, "dev", "--no-browser", "--no-reload", "--config", str(config)]
            command += ["--port", str(port), "--host", host]
            process = subprocess.Popen(command, env=env, start_new_session=True)
            stack.callback(_stop, process)
            if not _up(api, process):
                fail(
                    f"langgraph dev exited with code {process.returncode} while starting:"
                    " its log above names the cause (REDIS_URL, a TIERED_MEMORY_* setting"
                    " or a graph in the config; see docs/studio.md)."
                )
            typer.echo(f"Studio: {STUDIO_URL.format(api=api)}\nAPI: {api}")
            typer.echo("Press Ctrl-C to stop the server and the Redis it started.")
            code = process.wait()
            if code != 0:
                fail(f"langgraph dev exited with code {code}: see its log above.")
    except KeyboardInterrupt:
        typer.echo("Stopped.", err=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
