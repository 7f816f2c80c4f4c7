"""A TCP relay: every connection to LISTEN_HOST:PORT is joined to a new connection to
UPSTREAM_HOST:PORT, for each PORT given, and bytes pass both ways until either side closes.

The partition harness needs it for the dev broker alone. librdkafka's mock cluster listens on
127.0.0.1 of its own network namespace and names that address in its metadata, so a client in
another namespace reaches it through two relays: one in its own namespace, on 127.0.0.1:PORT, to
the broker namespace's address, and one there, from that address to 127.0.0.1:PORT. A cut of the
link between the two namespaces then silences the relayed connection as it would a direct one:
the client's requests are taken and never answered, and a new connection's upstream never opens.

Usage: python3 relay.py LISTEN_HOST UPSTREAM_HOST PORT [PORT...]
"""
import asyncio
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def joiner(upstream_host, port):
    async def join(client_reader, client_writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(upstream_host, port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))

    return join


async def main():
    listen_host, upstream_host, ports = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]
    servers = [await asyncio.start_server(joiner(upstream_host, port), listen_host, port) for port in ports]
    print("relaying", listen_host, "->", upstream_host, *ports, flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: relay.py LISTEN_HOST UPSTREAM_HOST PORT [PORT...]")
    asyncio.run(main())
