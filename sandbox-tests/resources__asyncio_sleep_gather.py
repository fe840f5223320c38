# Thousands of concurrent asyncio.sleep calls.
# MONTY: blocked limit /sleep limit|TimeoutError: /
# DOCKER: blocked /TimeoutError/
import asyncio
await asyncio.gather(*[asyncio.sleep(3600) for i in range(10000)])
