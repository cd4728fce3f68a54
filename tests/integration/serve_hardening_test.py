#!/usr/bin/env python3
"""`gpudoctor serve` exposed to hostile clients and bad configurations (issue 28, the
"Hardening" section of docs/prometheus.md):

- fails closed: a --web-config that cannot be read, parsed or validated stops serve at start
  (exit status 2) with an error naming the file and line; a bad --listen is a usage error;
- Host exactly once on HTTP/1.1;
- stays reachable: 1,000 hostile connections from one address (idle, slowloris, sending a
  request and never reading, reconnecting when cut off) while a scraper from another loopback
  address scrapes every second: every scrape answered in under 1 s;
- a 64-descriptor limit and 80 idle connections from four addresses: serve lowers
  --max-connections to what fits (saying so), keeps answering scrapes and does not spin (its CPU
  time stays low). accept() failing with EMFILE itself is tested in-process
  (tests/unit/http_limits_test.cpp): run out of every descriptor here, the sanitizers' own
  checks (UBSan's vptr check makes a pipe) would fail in the clang-asan build.

Loopback only: every connection goes to 127.0.0.1 from 127.0.0.0/8 addresses. Bounded: the
hostile phase lasts 15 s, with at most 1,000 connections open at once and 3,000 reconnections.

usage: serve_hardening_test.py GPUDOCTOR SOURCE_DIR WORK_DIR
"""

import http.client
import os
import resource
import selectors
import shutil
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Processes, check, main, need_tool, run, start_serve)  # noqa: E402

SCRAPE_HASH = "$2b$06$eVOB10AjDBoAopxip8QvYO4WOo3DJK4Ieqp7KxG960fq6lLD5N5JK"
HOSTILE = 1000           # connections open at once from 127.0.0.1
RECONNECTS = 3000        # at most, over the whole phase
RECONNECT_RATE = 200     # a second, at most
HOSTILE_SECONDS = 15
SCRAPER = "127.0.0.2"    # Prometheus, as far as serve can tell


def raw(addr, data, source=None, timeout=5):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout,
                                  source_address=(source, 0) if source else None) as s:
        s.sendall(data)
        out = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out += b
        except OSError:
            pass
        return out


def fails_closed(binary, work, cert, key):
    def serve_error(config_text=None, path=None, extra=()):
        if path is None:
            path = os.path.join(work, "web.yml")
            with open(path, "w") as f:
                f.write(config_text)
        r = run([binary, "serve", "--source", "sim:healthy", "--listen", "127.0.0.1:0",
                 "--web-config", path] + list(extra), timeout=20)
        return r.returncode, r.stderr.strip()

    web = os.path.join(work, "web.yml")
    tls = f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
    cases = [
        (None, work, f"--web-config {work}: is a directory"),
        ("", None, f"{web}: no tls_server_config or basic_auth_users"),
        ("basic_auth_users:\n  prometheus: '" + SCRAPE_HASH[:4] + "99" + SCRAPE_HASH[6:] + "'\n",
         None, f"{web}:2: user prometheus: the password must be a bcrypt hash"),
        ("basic_auth_users:\n  prometheus: '" + SCRAPE_HASH[:-1] + "!'\n", None,
         f"{web}:2: user prometheus: the password must be a bcrypt hash"),
        ("basic_auth_users:\n  prometheus: '" + SCRAPE_HASH + "'\nbasic_auth_user:\n  x: y\n",
         None, f"{web}:3: unknown key basic_auth_user"),
        (tls + "  min_version: TLS10\n", None, f"{web}:4: min_version TLS10"),
        (f"tls_server_config:\n  cert_file: {cert}\n", None,
         f"{web}:2: tls_server_config needs both cert_file and key_file"),
        (f"tls_server_config:\n  cert_file: {cert}\n  key_file: {work}/nokey.pem\n", None,
         f"{web}:3: key_file {work}/nokey.pem: No such file or directory"),
        (f"tls_server_config:\n  cert_file: {cert}\n  key_file: {cert}\n", None,
         f"{web}:3: cannot load key_file"),
    ]
    for text, path, message in cases:
        rc, err = serve_error(text, path)
        check(rc == 2 and message in err, f"web config {text or path!r}: exit {rc}: {err}")
        check("on http" not in err, f"serve started anyway: {err}")
    for listen, message in (("127.0.0.1:19864:1", "brackets"), ("::1:9835", "brackets"),
                            ("127.0.0.1:+80", "the port must be a number")):
        r = run([binary, "serve", "--source", "sim:healthy", "--listen", listen], timeout=20)
        check(r.returncode == 2 and f"--listen {listen}: " in r.stderr and message in r.stderr,
              f"--listen {listen}: exit {r.returncode}: {r.stderr}")
    for flag in ("--max-connections", "--max-connections-per-address"):
        r = run([binary, "serve", "--source", "sim:healthy", flag, "0"], timeout=20)
        check(r.returncode == 2 and flag in r.stderr, f"{flag} 0: {r.stderr}")
    r = run([binary, "serve", "--source", "sim:healthy", "--read-header-timeout", "1ms"],
            timeout=20)
    check(r.returncode == 2 and "--read-header-timeout" in r.stderr, r.stderr)


class Hostile:
    """HOSTILE connections from 127.0.0.1, a third each: silent, slowloris (a header byte every
    0.5 s), and a whole request whose answer is never read (the connection then idles, as in
    the issue's 512 connections that took the old server off the air). Any connection the
    server closes is opened again at once (up to RECONNECT_RATE a second, RECONNECTS in all)."""

    def __init__(self, port):
        self.port = port
        self.sel = selectors.DefaultSelector()
        self.stop = threading.Event()
        self.opened = self.reconnects = self.answered_503 = self.refused = self.dropped = 0
        self.pending = []  # kinds of the connections the server closed, to open again
        self.parked = []

    def connect(self, kind):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind(("127.0.0.1", 0))
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            self.refused += 1
            return
        self.opened += 1
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE,
                          {"kind": kind, "sent": False, "got": b""})

    def drop(self, s, data):
        self.sel.unregister(s)
        s.close()
        self.dropped += 1
        if data["got"].startswith(b"HTTP/1.1 503 "):
            self.answered_503 += 1
        self.pending.append(data["kind"])

    def run(self):
        kinds = ["silent", "slowloris", "unread"]
        for i in range(HOSTILE):
            self.connect(kinds[i % 3])
        start = time.time()
        next_drip = start + 0.5
        while not self.stop.is_set():
            # Reconnect what was cut off, at most RECONNECT_RATE a second and RECONNECTS in all.
            allowed = min(RECONNECTS, int((time.time() - start) * RECONNECT_RATE))
            while self.pending and self.reconnects < allowed:
                self.reconnects += 1
                self.connect(self.pending.pop())
            for key, events in self.sel.select(timeout=0.05):
                s, data = key.fileobj, key.data
                try:
                    if events & selectors.EVENT_WRITE and not data["sent"]:
                        data["sent"] = True
                        if data["kind"] == "slowloris":
                            s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                        elif data["kind"] == "unread":
                            # A whole request, then its answer is never read.
                            s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                            self.sel.unregister(s)
                            self.parked.append(s)
                            continue
                        self.sel.modify(s, selectors.EVENT_READ, data)
                    if events & selectors.EVENT_READ:
                        b = s.recv(4096)
                        if not b:
                            self.drop(s, data)
                        else:
                            data["got"] += b
                except BlockingIOError:
                    pass
                except OSError:
                    self.drop(s, data)
            if time.time() >= next_drip:
                next_drip += 0.5
                for key in list(self.sel.get_map().values()):
                    if key.data["kind"] == "slowloris" and key.data["sent"]:
                        try:
                            key.fileobj.send(b"X")
                        except BlockingIOError:
                            pass
                        except OSError:
                            self.drop(key.fileobj, key.data)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        for s in self.parked:
            s.close()
        self.sel.close()


def scrape_under_attack(procs, binary, work):
    p, addr = start_serve(procs, binary, work, "hostile",
                          ["--source", "sim:mixed,speed=30", "-i", "500ms"])
    port = int(addr.rsplit(":", 1)[1])
    hostile = Hostile(port)
    t = threading.Thread(target=hostile.run, daemon=True)
    t.start()
    time.sleep(2)  # the attack is under way before the first scrape
    latencies, failures = [], []
    conn = None
    try:
        for i in range(HOSTILE_SECONDS - 2):
            t0 = time.time()
            try:
                # Prometheus keeps its connection; every other scrape opens a fresh one too.
                if conn is None or i % 2:
                    if conn is not None:
                        conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5,
                                                      source_address=(SCRAPER, 0))
                conn.request("GET", "/metrics")
                r = conn.getresponse()
                body = r.read()
                took = time.time() - t0
                if r.status != 200 or b"DCGM_FI_DEV_GPU_UTIL" not in body:
                    failures.append(f"scrape {i}: HTTP {r.status}")
                latencies.append(took)
            except OSError as e:
                failures.append(f"scrape {i}: {e!r} after {time.time() - t0:.2f} s")
                conn = None
            time.sleep(max(0, 1 - (time.time() - t0)))
    finally:
        hostile.stop.set()
        t.join(10)
        if conn is not None:
            conn.close()
    check(p.poll() is None, "serve died under the hostile clients")
    check(hostile.opened >= HOSTILE, f"only {hostile.opened} hostile connections opened")
    check(not failures, f"scrapes failed under attack: {failures}")
    worst = max(latencies)
    print(f"hostile: {hostile.opened} connections opened ({HOSTILE} at once, "
          f"{hostile.reconnects} reconnections), {hostile.dropped} closed by serve, "
          f"{hostile.answered_503} of them with a 503; "
          f"{len(latencies)} scrapes from {SCRAPER}: median "
          f"{statistics.median(latencies) * 1000:.1f} ms, worst {worst * 1000:.1f} ms")
    check(worst < 1.0, f"a scrape took {worst:.2f} s under attack: {latencies}")
    check(hostile.dropped >= HOSTILE // 2,
          f"only {hostile.dropped} hostile connections were closed: no limit per address?")
    # A request of the one peer is still served once the attack ends.
    r = raw(addr, b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    check(r.startswith(b"HTTP/1.1 200 "), f"after the attack: {r[:60]!r}")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def out_of_descriptors(procs, binary, work):
    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    err = os.path.join(work, "serve-emfile.err")
    p = procs.start([binary, "serve", "--source", "sim:healthy", "--listen", "127.0.0.1:0",
                     "-i", "500ms"], err, must_exit_cleanly=True, preexec_fn=low_limit)
    deadline = time.time() + 20
    addr = None
    while time.time() < deadline and not addr:
        text = open(err).read()
        if "/metrics" in text:
            addr = text.split("http://", 1)[1].split("/metrics", 1)[0]
        check(p.poll() is None, f"serve exited: {text}")
        time.sleep(0.05)
    check(addr is not None, "serve with 64 descriptors did not start")
    check("open-file limit (64) leaves room for 25 connections" in open(err).read(),
          "no word on the low open-file limit: " + open(err).read())
    host, port = addr.rsplit(":", 1)
    held = []
    for i in range(80):
        s = socket.socket()
        s.bind((f"127.0.0.{3 + i % 4}", 0))
        s.connect((host, int(port)))
        held.append(s)
    time.sleep(0.5)
    c0 = cpu_seconds(p.pid)
    t0 = time.time()
    answered = 0
    for _ in range(4):
        r = raw(addr, b"GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
                source=SCRAPER)
        answered += r.startswith(b"HTTP/1.1 200 ")
        time.sleep(0.5)
    used = (cpu_seconds(p.pid) - c0) / (time.time() - t0)
    for s in held:
        s.close()
    print(f"64 descriptors: {answered}/4 scrapes answered, serve used {used * 100:.0f} % "
          f"of a core")
    check(answered == 4, f"only {answered} of 4 scrapes answered with 64 descriptors")
    check(used < 0.5, f"serve used {used * 100:.0f} % of a core: accept() spins")


def body():
    binary, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
    openssl = need_tool("openssl")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 8192) if hard != resource.RLIM_INFINITY else 8192
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    check(min(want, hard) > HOSTILE + 200, f"open-file limit {hard}: too low for the test")
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    r = run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=t",
             "-keyout", key, "-out", cert])
    check(r.returncode == 0, f"openssl req: {r.stderr}")
    fails_closed(binary, work, cert, key)
    with Processes() as procs:
        _, addr = start_serve(procs, binary, work, "host", ["--source", "sim:healthy"])
        for request in (b"GET /metrics HTTP/1.1\r\n\r\n",
                        b"GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"):
            r = raw(addr, request)
            check(r.startswith(b"HTTP/1.1 400 ") and b"exactly one Host header" in r,
                  f"{request!r}: {r[:80]!r}")
        check(raw(addr, b"GET /healthz HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 200 "),
              "HTTP/1.0 without Host")
        scrape_under_attack(procs, binary, work)
        out_of_descriptors(procs, binary, work)


if __name__ == "__main__":
    main(body)
