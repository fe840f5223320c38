#!/usr/bin/env python3
"""sessions.py: drive.py, with session handles carried from one step to another.

Same arguments, steps and report as drive.py (see there), plus one thing: a
"call" step may carry "session_from": N, and then its args get "session" set
to the handle that step N's result named (structuredContent.session). That is
what an agent does with a stateless (2026-07-28) connection: read the handle
from a result and pass it back.
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import drive  # noqa: E402


class SessionDriver(drive.Driver):
    async def step(self, s: dict[str, Any]) -> Any:
        if s.get("op") == "call" and "session_from" in s:
            earlier = self.out["results"][s["session_from"]]
            handle = (earlier.get("structuredContent") or {}).get("session")
            if not handle:
                raise ValueError(f"step {s['session_from']} named no session: {earlier}")
            s = {**s, "args": {**(s.get("args") or {}), "session": handle}}
        return await super().step(s)


if __name__ == "__main__":
    drive.Driver = SessionDriver  # drive.amain builds its driver from this name
    drive.main()
