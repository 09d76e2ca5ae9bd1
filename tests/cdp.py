"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe` (fd 3 in, fd 4
out, messages JSON ending in NUL): enough to load a page at an emulated viewport width and
evaluate an expression in it. No websocket library, no port: nothing else can connect."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any


class Chromium:
    def __init__(self, exe: str, profile: Path, env: dict[str, str] | None = None) -> None:
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()
        # the child sees the pipes as fds 3 (commands) and 4 (replies)
        self.proc = subprocess.Popen(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=lambda: (os.dup2(to_child_r, 3), os.dup2(from_child_w, 4)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.session: str | None = None

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buf:
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, wait_event: str | None = None, **params: Any) -> dict[str, Any]:
        """Send a command; return its result (after `wait_event`, when named, has arrived)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        result: dict[str, Any] | None = None
        seen = wait_event is None
        for _ in range(100_000):  # a count of messages, not a time budget
            m = self._read()
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                result = m.get("result", {})
            elif m.get("method") == wait_event:
                seen = True
            if result is not None and seen:
                return result
        raise RuntimeError(f"{method}: no reply")

    def open(self, url: str, width: int, height: int) -> None:
        """Attach to the page, emulate a `width` x `height` viewport (mobile below 600 px,
        so the meta viewport applies as on a phone) and load `url` until its load event."""
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]
        self.send("Page.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        self.send("Page.navigate", wait_event="Page.loadEventFired", url=url)

    def navigate(self, url: str) -> None:
        """Load another `url` in the page `open` attached to (same viewport)."""
        self.send("Page.navigate", wait_event="Page.loadEventFired", url=url)

    def evaluate(self, expression: str) -> Any:
        r = self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in r:
            raise RuntimeError(str(r["exceptionDetails"]))
        return r["result"].get("value")

    def screenshot(self, out: Path) -> Path:
        """The viewport as PNG."""
        import base64

        out.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"]))
        return out

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._r)
        os.close(self._w)
