# Open a connection with asyncio streams.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: blocked /OSError|ConnectionRefused|PermissionError|timed out/
import asyncio
async def go():
    r, w = await asyncio.open_connection('127.0.0.1', {{DECOY_PORT}})
    return r
await go()
