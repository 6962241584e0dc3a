#!/usr/bin/env python3
"""Small host-side helper for the drivewatch VM harness (stdlib only).

Subcommands (all take a hard timeout so a wedged QEMU never hangs CI):
  qmp SOCK JSON [--timeout S] [--wait-event NAME [--event-device ID]]
      Connect to a QMP unix socket, negotiate capabilities, send one command,
      print the reply object as one JSON line.  Exit 0 on "return", 1 on
      "error" or timeout.  With --wait-event, keep reading on the same
      session until that event arrives (optionally for data.device == ID),
      and print it as a second JSON line.
  send SOCK TEXT [--timeout S]
      Write TEXT plus a newline to a unix stream socket (the guest's
      control serial port, /dev/ttyS1) and close.
  freeport
      Print a TCP port that is currently free on 127.0.0.1.
  jsonpath EXPR
      Read JSON on stdin, print the value at a dotted path such as
      data.result.0.value.1 (empty output if missing).
"""
import json
import socket
import sys
import time


def die(msg):
    print("vmctl: " + msg, file=sys.stderr)
    sys.exit(1)


class Qmp:
    def __init__(self, path, deadline):
        self.deadline = deadline
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # QEMU may still be creating the socket right after start.
        while True:
            try:
                self.sock.settimeout(max(0.1, deadline - time.monotonic()))
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    die("cannot connect to QMP socket %s" % path)
                time.sleep(0.1)
        self.buf = b""

    def read_obj(self):
        while b"\n" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                die("timeout waiting for QMP reply")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                die("timeout waiting for QMP reply")
            if not chunk:
                die("QMP connection closed by QEMU")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        line = line.strip()
        if not line:
            return self.read_obj()
        return json.loads(line)

    def send(self, obj):
        self.sock.sendall(json.dumps(obj).encode() + b"\n")

    def reply(self, events):
        while True:
            obj = self.read_obj()
            if "event" in obj:
                events.append(obj)
                continue
            return obj


def cmd_qmp(args):
    sock = args.pop(0)
    cmd = json.loads(args.pop(0))
    timeout, wait_event, event_dev = 10.0, None, None
    while args:
        opt = args.pop(0)
        if opt == "--timeout":
            timeout = float(args.pop(0))
        elif opt == "--wait-event":
            wait_event = args.pop(0)
        elif opt == "--event-device":
            event_dev = args.pop(0)
        else:
            die("unknown option " + opt)
    q = Qmp(sock, time.monotonic() + timeout)
    greeting = q.read_obj()
    if "QMP" not in greeting:
        die("unexpected QMP greeting: %r" % greeting)
    events = []
    q.send({"execute": "qmp_capabilities"})
    r = q.reply(events)
    if "return" not in r:
        die("qmp_capabilities failed: %r" % r)
    q.send(cmd)
    r = q.reply(events)
    print(json.dumps(r))
    if "return" not in r:
        sys.exit(1)
    if wait_event:
        def match(ev):
            if ev.get("event") != wait_event:
                return False
            return event_dev is None or ev.get("data", {}).get("device") == event_dev
        while True:
            for ev in events:
                if match(ev):
                    print(json.dumps(ev))
                    return
            events = [q.read_obj()]


def cmd_send(args):
    path, text = args[0], args[1]
    timeout = float(args[3]) if len(args) > 3 and args[2] == "--timeout" else 10.0
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            s.close()
            if time.monotonic() > deadline:
                die("cannot connect to %s" % path)
            time.sleep(0.1)
    s.sendall(text.encode() + b"\n")
    # Give QEMU a moment to drain the socket into the UART before we close.
    time.sleep(0.2)
    s.close()


def cmd_freeport(_args):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    s.close()


def cmd_jsonpath(args):
    try:
        v = json.load(sys.stdin)
    except ValueError:
        return
    for part in args[0].split(".") if args and args[0] else []:
        try:
            v = v[int(part)] if isinstance(v, list) else v[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return
    print(v if isinstance(v, str) else json.dumps(v))


def main():
    if len(sys.argv) < 2:
        die(__doc__)
    sub, args = sys.argv[1], sys.argv[2:]
    {"qmp": cmd_qmp, "send": cmd_send, "freeport": cmd_freeport,
     "jsonpath": cmd_jsonpath}.get(sub, lambda a: die("unknown subcommand " + sub))(args)


if __name__ == "__main__":
    main()
