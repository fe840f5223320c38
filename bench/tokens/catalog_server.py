#!/usr/bin/env python3
"""Exactly ODD_TOOLS=N generated tools of tests/servers/odd_server.py, without its 14 fixed test tools.

    ODD_TOOLS=100 python catalog_server.py   # stdio MCP server
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "servers"))

import odd_server  # noqa: E402

server = odd_server.make_server()
odd_server.register_catalog(server, int(os.environ.get("ODD_TOOLS", "0") or 0))
server.run()
