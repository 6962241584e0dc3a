#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
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
  prom-wait URL EXPR WANT TIMEOUT
      Poll the instant query EXPR on the Prometheus at URL every 0.1 s until
      it returns at least one series and every value equals WANT (a number),
      or until it returns nothing when WANT is "absent".  Prints the seconds
      waited and the values; exit 1 (printing the last result) on timeout.
  prom-first URL SELECTOR WANT SINCE
      Print the Prometheus timestamp of the first raw sample of SELECTOR
      (one series) equal to WANT at or after Unix time SINCE, using the
      range selector SELECTOR[<since..now>]; empty output if none.

The Prometheus helpers are also used as a module (import vmctl): see Prom.
"""
import json
import math
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


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


class Prom:
    """Minimal client of Prometheus' HTTP query API (127.0.0.1 only).

    Proxies from the environment are ignored: the test Prometheus is local.
    """

    def __init__(self, url, timeout=5.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def api(self, path, **params):
        q = urllib.parse.urlencode(params)
        try:
            with self.opener.open("%s%s?%s" % (self.url, path, q), timeout=self.timeout) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            raise RuntimeError("Prometheus %s %r: HTTP %s %s" % (path, params, e.code, e.read()[:300]))
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise RuntimeError("Prometheus %s %r: %s" % (path, params, e))
        if body.get("status") != "success":
            raise RuntimeError("Prometheus %s %r: %r" % (path, params, body))
        return body["data"]

    def query(self, expr, at=None):
        """Instant query: list of (labels dict, float value)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = "%.3f" % at
        data = self.api("/api/v1/query", **params)
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        if data["resultType"] != "vector":
            raise RuntimeError("query %r: %s result, expected a vector" % (expr, data["resultType"]))
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def samples(self, selector, seconds, at=None):
        """Raw samples of a range selector: list of (labels, [(ts, value)])."""
        params = {"query": "%s[%ds]" % (selector, max(1, int(math.ceil(seconds))))}
        if at is not None:
            params["time"] = "%.3f" % at
        data = self.api("/api/v1/query", **params)
        return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]

    def value(self, expr, at=None):
        """The single value of EXPR, or None when it returns nothing."""
        r = self.query(expr, at)
        if len(r) > 1:
            raise RuntimeError("query %r returned %d series, expected at most 1: %r" % (expr, len(r), r))
        return r[0][1] if r else None

    def wait(self, expr, want, timeout, interval=0.1):
        """Poll until every value of EXPR equals want (a float) or, with
        want None, until EXPR returns nothing.  Returns (seconds waited,
        last result); raises TimeoutError with the last result."""
        t0 = time.monotonic()
        last = None
        while True:
            try:
                last = self.query(expr)
                if want is None and not last:
                    return time.monotonic() - t0, last
                if want is not None and last and all(v == want for _, v in last):
                    return time.monotonic() - t0, last
            except RuntimeError as e:
                last = str(e)
            if time.monotonic() - t0 > timeout:
                raise TimeoutError("%s = %s after %.1fs, wanted %s" % (
                    expr, fmt_result(last), timeout, "absent" if want is None else fmt_num(want)))
            time.sleep(interval)


def fmt_num(v):
    return ("%d" % v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e18 else repr(v)


def fmt_result(result):
    if not isinstance(result, list):
        return str(result)
    if not result:
        return "(no series)"
    return ", ".join("%s%s=%s" % (l.get("__name__", ""), {k: v for k, v in l.items() if k not in ("__name__", "job", "instance")}, fmt_num(v))
                     for l, v in result)


def cmd_prom_wait(args):
    url, expr, want, timeout = args[0], args[1], args[2], float(args[3])
    try:
        waited, last = Prom(url).wait(expr, None if want == "absent" else float(want), timeout)
    except TimeoutError as e:
        die(str(e))
    print("%.2f %s" % (waited, fmt_result(last)))


def cmd_prom_first(args):
    url, selector, want, since = args[0], args[1], float(args[2]), float(args[3])
    now = time.time()
    series = Prom(url).samples(selector, now - since + 1, at=now)
    if len(series) != 1:
        die("%s: %d series, expected 1" % (selector, len(series)))
    for ts, v in series[0][1]:
        if ts >= since and v == want:
            print("%.3f" % ts)
            return


def main():
    if len(sys.argv) < 2:
        die(__doc__)
    sub, args = sys.argv[1], sys.argv[2:]
    {"qmp": cmd_qmp, "send": cmd_send, "freeport": cmd_freeport,
     "jsonpath": cmd_jsonpath, "prom-wait": cmd_prom_wait,
     "prom-first": cmd_prom_first}.get(sub, lambda a: die("unknown subcommand " + sub))(args)


if __name__ == "__main__":
    main()
