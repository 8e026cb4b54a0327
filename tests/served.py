"""A ``judgegym serve`` app on a free loopback port, in a thread of the test process: real
HTTP and WebSocket through uvicorn, as a client on another machine would see it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from judgegym.serving.server import EnvServer, ServeConfig, create_app


@contextmanager
def served(env_id: str = "RagSupport-v0", *, judge: Any = None, **config: Any) -> Iterator[tuple[str, EnvServer]]:
    """(``http://127.0.0.1:PORT``, or https with TLS, and the app's `EnvServer`) while the server runs."""
    app = create_app(ServeConfig(env_id=env_id, **config), judge=judge)
    settings = app.state.server.config
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            ws_max_size=settings.max_body_bytes,
            ssl_certfile=settings.ssl_certfile,
            ssl_keyfile=settings.ssl_keyfile,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"{'https' if settings.ssl_certfile else 'http'}://127.0.0.1:{port}", app.state.server
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def wait_until(condition: Any, timeout: float = 10.0) -> bool:
    """Poll `condition()` until it is true (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())
