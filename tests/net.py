"""Loopback helpers for tests that start their own servers."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback TCP port that is free now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
