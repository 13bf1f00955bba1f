"""An OTLP/HTTP sink for bench.overhead: answers every POST /v1/traces with 200 and an
empty ExportTraceServiceResponse, reading and dropping the body (raw asyncio, so the
sink's own cost stays out of ragtrim's numbers). GET /health for readiness.

    python -m tests.doubles.otlp_sink --port 4318
"""

from __future__ import annotations

import argparse
import asyncio

OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(OK)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4318)
    asyncio.run(main(parser.parse_args().port))
