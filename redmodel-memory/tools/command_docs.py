#!/usr/bin/env python3
"""Writes src/command_table/docs.resp (or docs74.resp): the COMMAND DOCS
reply of a redis-server 7.0.15 (or 7.4.1), in RESP3 (maps, sets, as the server types them),
byte for byte. The engine parses it once and answers COMMAND DOCS from
it, keeping the commands and subcommands it serves.

Run against a redis-server 7.0.15, or 7.4.1 (default 127.0.0.1:6379):

    python3 tools/command_docs.py [port] > src/command_table/docs.resp
    python3 tools/command_docs.py [port] > src/command_table/docs74.resp
"""
import socket
import sys


def frame_end(buf, at):
    """The offset just past the RESP3 frame starting at `at`, or None if
    the buffer does not hold all of it yet."""
    end = buf.find(b'\r\n', at)
    if end < 0:
        return None
    kind, rest = buf[at:at + 1], buf[at + 1:end]
    at = end + 2
    if kind in (b'$', b'=', b'!'):
        n = int(rest)
        if n < 0:
            return at
        return at + n + 2 if len(buf) >= at + n + 2 else None
    if kind in (b'*', b'~', b'>', b'%', b'|'):
        n = int(rest)
        if kind in (b'%', b'|'):
            n *= 2
        for _ in range(max(n, 0)):
            at = frame_end(buf, at)
            if at is None:
                return None
        return at
    if kind == b'-':
        raise RuntimeError(rest.decode())
    return at


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    sock = socket.create_connection(('127.0.0.1', port))
    sock.sendall(b'HELLO 3\r\nCOMMAND DOCS\r\n')
    buf = b''
    hello_end = None
    while True:
        buf += sock.recv(1 << 16)
        if hello_end is None:
            hello_end = frame_end(buf, 0)
            if hello_end is None:
                continue
        end = frame_end(buf, hello_end)
        if end is not None:
            break
    sys.stdout.buffer.write(buf[hello_end:end])


main()
