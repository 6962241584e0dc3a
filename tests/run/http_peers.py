#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile and odd HTTP peers for tests/run/http_hardening_test.sh, on real
sockets to 127.0.0.1 only.

  hold PORT IDLE DRIP [--tls]   keep IDLE silent connections and DRIP peers
                                sending a request head one byte a second,
                                reconnecting whatever the server closes;
                                prints "ready" once all are connected
  bomb PORT REQUESTS LINES      REQUESTS concurrent requests, each with up
                                to LINES short header lines; prints each
                                status code
  pipeline PORT                 three GETs in one write; prints the status
                                and the first body line of each answer
  flood PORT LOOPS USER:PASS    LOOPS threads sending requests with a wrong
                                password, until killed
  deadline PORT                 one request head, a byte every 0.5 s, until
                                the server closes; prints the seconds taken
  stall PORT COUNT BYTES        COUNT connections that each send the first
                                BYTES (or "all") of a real TLS ClientHello
                                and then go silent; prints "ready" once the
                                server has read every byte sent or closed
                                the connection (/proc/net/tcp shows its
                                ends), then "closed after S s" (from the
                                first connect) once the server has closed
                                them all; exits when killed
"""
import asyncio
import base64
import http.client
import select
import selectors
import socket
import ssl
import sys
import threading
import time

HOST = "127.0.0.1"


def tls_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def idle_peer(port, stop):
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
            await reader.read()  # until the server closes it
            writer.close()
        except OSError:
            await asyncio.sleep(0.1)


async def drip_peer(port, use_tls, stop):
    head = f"GET /metrics HTTP/1.1\r\nHost: {HOST}\r\nX-Slow: " + "d" * 4096
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(
                HOST, port, ssl=tls_context() if use_tls else None)
            for ch in head:
                writer.write(ch.encode())
                await writer.drain()
                await asyncio.sleep(1)
        except (OSError, ssl.SSLError):
            await asyncio.sleep(0.1)


async def hold(port, idle, drip, use_tls):
    stop = asyncio.Event()
    tasks = [asyncio.create_task(idle_peer(port, stop)) for _ in range(idle)]
    tasks += [asyncio.create_task(drip_peer(port, use_tls, stop)) for _ in range(drip)]
    await asyncio.sleep(2)
    print("ready", flush=True)
    await asyncio.gather(*tasks)


def read_status(sock):
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0].decode(errors="replace")


def bomb_one(port, lines, out, i):
    sock = socket.create_connection((HOST, port))
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    chunk = b"a:b\r\n" * 20000
    sent = 0
    status = "no answer"
    try:
        while sent < lines:
            sock.sendall(chunk)
            sent += 20000
            ready, _, _ = select.select([sock], [], [], 0)
            if ready:
                break
        status = read_status(sock)
    except OSError as e:
        status = f"error {e}"
    out[i] = f"{status} after {sent} lines"
    sock.close()


def bomb(port, requests, lines):
    out = [None] * requests
    threads = [threading.Thread(target=bomb_one, args=(port, lines, out, i))
               for i in range(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for line in out:
        print(line)


def pipeline(port):
    sock = socket.create_connection((HOST, port))
    paths = ["/-/healthy", "/metrics", "/"]
    sock.sendall(b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in paths))
    f = sock.makefile("rb")
    for p in paths:
        # http.client closes its file after one response, so the three are
        # read here: status line, fields, Content-Length bytes of body.
        status = f.readline().decode().split(" ", 2)
        length = 0
        while True:
            line = f.readline().decode()
            if line in ("\r\n", ""):
                break
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        body = f.read(length).decode(errors="replace")
        first = body.splitlines()[0][:40] if body else ""
        print(f"{p} {status[1] if len(status) > 1 else '?'} {first}")


def flood(port, loops, credentials):
    auth = "Basic " + base64.b64encode(credentials.encode()).decode()

    def loop(n):
        while True:
            try:
                conn = http.client.HTTPConnection(HOST, port, timeout=30)
                while True:
                    conn.request("GET", "/metrics",
                                 headers={"Authorization": auth})
                    res = conn.getresponse()
                    res.read()
                    if res.getheader("Connection", "").lower() == "close":
                        break
            except OSError:
                pass

    for n in range(loops):
        threading.Thread(target=loop, args=(n,), daemon=True).start()
    print("flooding", flush=True)
    threading.Event().wait()


def deadline(port):
    import time
    sock = socket.create_connection((HOST, port))
    start = time.monotonic()
    head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"d" * 1000
    try:
        for i in range(len(head)):
            sock.sendall(head[i:i + 1])
            ready, _, _ = select.select([sock], [], [], 0.5)
            if ready and not sock.recv(4096):
                break
    except OSError:
        pass
    print(f"{time.monotonic() - start:.1f}")


def client_hello():
    """The first flight of Python's own TLS client, as it goes on the wire."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = tls_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def readable(sock):
    """Whether `sock` has something to read now (poll, as its descriptor
    may be past select's 1024)."""
    p = select.poll()
    p.register(sock, select.POLLIN)
    return bool(p.poll(0))


def server_behind(port, socks):
    """How many of `socks` the server has not caught up with: its end is
    not yet there, or still holds bytes it has not read. An end the server
    has closed (FIN_WAIT1 and later in /proc/net/tcp, or gone, with the
    close waiting to be read on our side) counts as caught up."""
    established, closing = {}, set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if int(local.split(":")[1], 16) != port:
                continue
            client = int(remote.split(":")[1], 16)
            if state == "01":
                established[client] = int(fields[4].split(":")[1], 16)
            elif state in ("04", "05", "06", "07", "09", "0B"):
                closing.add(client)
    behind = 0
    for sock in socks:
        client = sock.getsockname()[1]
        if established.get(client) == 0 or client in closing:
            continue
        if client not in established and readable(sock):
            continue
        behind += 1
    return behind


def stall(port, count, nbytes):
    hello = client_hello()
    nbytes = len(hello) if nbytes == "all" else int(nbytes)
    if not 0 < nbytes <= len(hello):
        sys.exit(f"stall: {nbytes} bytes of a {len(hello)}-byte ClientHello: "
                 f"expected 1 to {len(hello)}")
    start = time.monotonic()
    socks = []
    for _ in range(count):
        sock = socket.create_connection((HOST, port))
        sock.sendall(hello[:nbytes])
        socks.append(sock)
    # Bounded, so a server that never reads is reported rather than waited on.
    for _ in range(600):
        behind = server_behind(port, socks)
        if behind == 0:
            break
        time.sleep(0.05)
    else:
        sys.exit(f"stall: after 30 s the server had not yet accepted or read "
                 f"{behind} of {count} connections")
    print(f"ready: {count} connections sent {nbytes} of {len(hello)} ClientHello bytes",
          flush=True)
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    open_ = count
    while open_:
        for key, _ in sel.select():
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                open_ -= 1
    print(f"closed after {time.monotonic() - start:.1f} s", flush=True)


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "hold":
        asyncio.run(hold(port, int(sys.argv[3]), int(sys.argv[4]), "--tls" in sys.argv))
    elif cmd == "bomb":
        bomb(port, int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "pipeline":
        pipeline(port)
    elif cmd == "deadline":
        deadline(port)
    elif cmd == "stall":
        stall(port, int(sys.argv[3]), sys.argv[4])
    elif cmd == "flood":
        flood(port, int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
