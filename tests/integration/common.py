"""Helpers of the integration tests: start `gpudoctor serve` and other processes, always stop
them, fetch over HTTP, fail with a clear message (never skip: CI installs every tool)."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import json
import urllib.error
import urllib.parse
import urllib.request


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def need_tool(name):
    path = shutil.which(name)
    check(path is not None,
          f"{name} not found: install it with scripts/install-deps.sh (Debian's "
          f"{'prometheus' if name in ('prometheus', 'promtool') else name} package)")
    return path


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """Started processes, each stopped (SIGTERM, then SIGKILL) when the block ends."""

    def __init__(self):
        self.procs = []

    def __enter__(self):
        return self

    def start(self, args, stderr_path, must_exit_cleanly=False, **kw):
        err = open(stderr_path, "wb")
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, **kw)
        p.stderr_path = stderr_path
        p.must_exit_cleanly = must_exit_cleanly
        self.procs.append(p)
        return p

    def __exit__(self, exc_type, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + 5
        unclean = []
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.must_exit_cleanly and p.returncode != 0:
                unclean.append(f"{' '.join(p.args[:3])} exited with {p.returncode} after SIGTERM: "
                               + open(p.stderr_path, errors="replace").read()[-2000:])
        if unclean and exc_type is None:  # a sanitizer report or a crash at shutdown
            raise Failure("; ".join(unclean))
        return False


def start_serve(procs, binary, work, name, args, env=None):
    """Starts `gpudoctor serve ARGS --listen 127.0.0.1:0`; returns (process, "host:port")."""
    err = os.path.join(work, f"serve-{name}.err")
    p = procs.start([binary, "serve", "--listen", "127.0.0.1:0"] + args, err,
                    must_exit_cleanly=True, env=env)
    deadline = time.time() + 20
    while time.time() < deadline:
        text = open(err, encoding="utf-8", errors="replace").read()
        m = re.search(r"on https?://([0-9.]+:\d+)/metrics", text)
        if m:
            return p, m.group(1)
        check(p.poll() is None, f"serve {name} exited with {p.returncode}: {text}")
        time.sleep(0.05)
    raise Failure(f"serve {name} did not start listening within 20 s")


def http_get(url, headers=None, timeout=10, context=None):
    """(status, headers, body bytes); HTTP errors come back as their status, not exceptions."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def query(prom, expr, at=None):
    """An instant query through Prometheus' HTTP API; its result list."""
    params = {"query": expr}
    if at:
        params["time"] = at
    status, _, body = http_get(f"{prom}/api/v1/query?{urllib.parse.urlencode(params)}")
    check(status == 200, f"query {expr}: HTTP {status}: {body[:300]!r}")
    answer = json.loads(body)
    check(answer["status"] == "success", f"query {expr}: {answer}")
    return answer["data"]["result"]


def wait_for(what, predicate, deadline, every=0.5):
    while time.time() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(every)
    raise Failure(f"timed out waiting for {what}")


def start_prometheus(procs, prometheus, work, port, deadline):
    """Debian's Prometheus on 127.0.0.1:PORT with WORK/prometheus.yml, its data in WORK/data;
    returns (process, URL) once it is ready."""
    p = procs.start([prometheus, "--config.file=" + os.path.join(work, "prometheus.yml"),
                     "--storage.tsdb.path=" + os.path.join(work, "data"),
                     "--web.listen-address=127.0.0.1:" + str(port), "--log.level=warn"],
                    os.path.join(work, "prometheus.log"), cwd=work)
    url = f"http://127.0.0.1:{port}"

    def ready():
        check(p.poll() is None,
              "prometheus exited: " + open(p.stderr_path, errors="replace").read())
        try:
            return http_get(f"{url}/-/ready", timeout=2)[0] == 200
        except OSError:
            return False
    wait_for("prometheus to be ready", ready, deadline, 0.2)
    return p, url


def run(args, timeout=120, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def main(body):
    """Runs body(); prints PASS or the failure and exits 0 or 1."""
    start = time.time()
    try:
        body()
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"PASS ({time.time() - start:.1f} s)")
