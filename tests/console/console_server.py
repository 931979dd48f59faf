"""A console served by uvicorn in a thread of the test process, on a free loopback port."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

from kafkalite.console import BrokerMetrics, ClusterReader, create_app


class Console:
    """A console served by uvicorn in a thread, on a free loopback port."""

    def __init__(self, reader: ClusterReader, allow_writes: bool,
                 metrics: BrokerMetrics | None = None) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.server = uvicorn.Server(uvicorn.Config(
            create_app(reader, allow_writes=allow_writes, metrics=metrics), host="127.0.0.1",
            port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the console did not start within 10 s"
            time.sleep(0.05)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
