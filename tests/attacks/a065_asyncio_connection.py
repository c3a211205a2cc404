# attack: asyncio.open_connection (pulls socket in through the stdlib)
# expect: denied
# layer: import
import asyncio

asyncio.run(asyncio.open_connection("127.0.0.1", 80))
print("ESCAPED: asyncio connected")
