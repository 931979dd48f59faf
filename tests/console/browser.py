"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-
pipe``: JSON messages separated by NUL bytes on the browser's fds 3 and 4), so one browser
renders every page of a test module: no websocket library, no second browser start.

A page is loaded under a virtual time budget, as ``chromium --virtual-time-budget`` does:
its timers run on virtual time (paused while fetches are pending), so a live page takes
its samples without the test waiting for them in real time.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WAIT_S = 30.0
"""The longest any one step may take (bounded waits, even on a loaded machine)."""


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self, width: int = 1100, height: int = 760) -> None:
        if CHROMIUM is None:
            raise BrowserError("chromium is not installed")
        self.width, self.height = width, height
        self._profile = tempfile.mkdtemp(prefix="console-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # bash (dash takes one-digit fds only) puts them on fds 3 and 4: they must not be 3
        # or 4 already
        to_browser_r, from_browser_w = (_above_4(to_browser_r), _above_4(from_browser_w))
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                 f"--user-data-dir={self._profile}", "--remote-debugging-pipe"]
        self._process = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}', CHROMIUM,
             *flags], pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):  # it may have exited already
            self._send("Browser.close")
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self._profile, ignore_errors=True)

    def render(self, url: str, virtual_time_ms: int = 5000) -> tuple[str, bytes]:
        """The page's DOM once ``virtual_time_ms`` of its time ran, and a PNG screenshot."""
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self._send("Target.attachToTarget",
                             {"targetId": target, "flatten": True})["sessionId"]
        try:
            self._send("Emulation.setDeviceMetricsOverride",
                       {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                        "mobile": False}, session)
            self._send("Emulation.setVirtualTimePolicy", {"policy": "pause"}, session)
            self._send("Page.navigate", {"url": url}, session)
            self._send("Emulation.setVirtualTimePolicy",
                       {"policy": "pauseIfNetworkFetchesPending", "budget": virtual_time_ms},
                       session)
            self._wait_event("Emulation.virtualTimeBudgetExpired", session)
            dom = self._send("Runtime.evaluate",
                             {"expression": "document.documentElement.outerHTML",
                              "returnByValue": True}, session)["result"]["value"]
            shot = self._send("Page.captureScreenshot", {"format": "png"}, session)["data"]
        finally:
            self._send("Target.closeTarget", {"targetId": target})
        return "<!DOCTYPE html>\n" + dom, base64.b64decode(shot)

    def _send(self, method: str, params: dict[str, Any] | None = None,
              session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method,
                                   "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + WAIT_S
        while True:
            answer = self._receive(deadline, method)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result
            if "method" in answer:
                self._events.append(answer)

    def _wait_event(self, method: str, session: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while True:
            for event in self._events:
                if event["method"] == method and event.get("sessionId") == session:
                    self._events.remove(event)
                    return
            self._events.append(self._receive(deadline, method))

    def _receive(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self._from_browser], [], [], max(left, 0))
            if not readable:
                raise BrowserError(f"no answer to {waiting_for} within {WAIT_S} s")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium exited while waiting for {waiting_for}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed


def _above_4(fd: int) -> int:
    """``fd`` moved to a number above 4."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 5)
    os.close(fd)
    return moved
