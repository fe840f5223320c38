# async/await and asyncio (tests/integration/differential.rs).

# === async_gather
import asyncio
async def work(n):
    await asyncio.sleep(0)
    return n * n
async def main():
    return await asyncio.gather(work(1), work(2), work(3))
print(asyncio.run(main()))

# === async_top_level_await
import asyncio
async def one():
    return 1
await one() + 1

# === async_sequential
import asyncio
log = []
async def step(name):
    log.append(name)
    await asyncio.sleep(0)
    return name.upper()
async def main():
    a = await step("a")
    b = await step("b")
    return a + b
print(asyncio.run(main()), log)

# === async_exception
import asyncio
async def fail():
    raise ValueError("async bad")
async def main():
    try:
        await fail()
    except ValueError as e:
        return f"caught {e}"
print(asyncio.run(main()))

# === async_gather_exception
import asyncio
async def ok():
    return 1
async def bad():
    raise KeyError("k")
async def main():
    return await asyncio.gather(ok(), bad())
asyncio.run(main())

# === async_create_task
import asyncio
async def sq(x):
    return x * x
async def main():
    tasks = [asyncio.create_task(sq(i)) for i in range(4)]
    return [await t for t in tasks]
print(asyncio.run(main()))

# === async_tool_calls_gather
import asyncio
async def main():
    return await asyncio.gather(*(odd_add_numbers(a=i, b=1) for i in range(3)))
asyncio.run(main())

# === async_function_type
import asyncio
async def f():
    return 5
c = f()
print(type(c).__name__)
print(asyncio.run(c))

# === async_wait_for
import asyncio
async def quick():
    return "fast"
async def main():
    return await asyncio.wait_for(quick(), timeout=5)
print(asyncio.run(main()))

# === async_nested
import asyncio
async def inner(x):
    return x + 1
async def outer(x):
    return await inner(await inner(x))
print(asyncio.run(outer(1)))
