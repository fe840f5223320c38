# Start 5,000 concurrent tool calls with asyncio.gather.
# MONTY: blocked limit /CODEMCP_MAX_TOOL_CALLS/
# DOCKER: blocked /CODEMCP_MAX_TOOL_CALLS/
import asyncio
await asyncio.gather(*[odd_add_numbers(a=i, b=1) for i in range(5000)])
