#!/usr/bin/env python3
"""End-to-end `gpudoctor serve` on the simulator: the exposition passes `promtool check metrics`
(gpudoctor's own names clean; dcgm-exporter's names only with the two complaints dcgm-exporter's
own naming brings), OpenMetrics on request, /diagnosis as the JSON contract, /healthz, /, 404,
oversized and malformed requests cut off while the server stays up, process names only when
asked, TLS and basic auth from a web configuration file, and a clean stop on SIGTERM.

usage: serve_test.py GPUDOCTOR SOURCE_DIR WORK_DIR
"""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import base64

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Processes, check, http_get, main, need_tool, run, start_serve)  # noqa: E402

# bcrypt ($2b$, cost 6) of "scrape-secret", made with libxcrypt for this test.
SCRAPE_HASH = "$2b$06$eVOB10AjDBoAopxip8QvYO4WOo3DJK4Ieqp7KxG960fq6lLD5N5JK"

# What promtool says of dcgm-exporter's own naming, which serve keeps on purpose: the camelCase
# label modelName, counters without _total (energy, PCIe replays, remapped rows), and the word
# "counter" in DCGM_FI_DEV_PCIE_REPLAY_COUNTER.
DCGM_LINT = re.compile(r"^DCGM_FI_\w+ (label names should be written in 'snake_case' not "
                       r"'camelCase'|counter metrics should have \"_total\" suffix|"
                       r"metric name should not include type 'counter')$")


def promtool_problems(promtool, text):
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    return r.returncode, lines


def raw_request(address, data, read_timeout=5):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=read_timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass
        chunks = []
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        except OSError:
            pass
        return b"".join(chunks)


def body():
    binary, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
    promtool = need_tool("promtool")
    openssl = need_tool("openssl")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    schema = json.load(open(os.path.join(source, "docs/diagnosis.schema.json")))
    import jsonschema  # python3-jsonschema, as the schema test uses

    with Processes() as procs:
        # mixed: 8 GPUs, some working, some held idle, some free; fast, so the live diagnosis
        # has findings within the test.
        p, addr = start_serve(procs, binary, work, "mixed",
                              ["--source", "sim:mixed,speed=30", "-i", "200ms",
                               "--hostname", "test-node"])
        _, own = start_serve(procs, binary, work, "own",
                             ["--source", "sim:contention,speed=30", "-i", "200ms",
                              "--no-dcgm-names"])
        _, procs_addr = start_serve(procs, binary, work, "processes",
                                    ["--source", "sim:contention,speed=30", "-i", "200ms",
                                     "--expose-process-names"])
        time.sleep(2.5)

        status, headers, data = http_get(f"http://{addr}/metrics")
        text = data.decode()
        check(status == 200, f"/metrics: HTTP {status}")
        check(headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8",
              headers["Content-Type"])
        for family in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE",
                       "gpudoctor_efficiency_ratio", "gpudoctor_busy_idle",
                       "gpudoctor_power_default_limit_watts", "gpudoctor_clock_event_reason",
                       "gpudoctor_finding", "gpudoctor_scrape_success",
                       "gpudoctor_scrape_duration_seconds", "gpudoctor_build_info"):
            check(f"# TYPE {family} " in text, f"/metrics lacks {family}")
        check(re.search(r'DCGM_FI_DEV_GPU_UTIL\{gpu="0",UUID="GPU-[^"]+",pci_bus_id="[^"]+",'
                        r'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
                        r'Hostname="test-node"\} ', text), "dcgm-exporter's labels")
        check('gpudoctor_finding{' in text and 'cause="idle"' in text, "the idle GPUs' finding")
        rc, problems = promtool_problems(promtool, text)
        unexpected = [l for l in problems if not DCGM_LINT.match(l)]
        check(not unexpected, f"promtool check metrics: {unexpected[:5]}")
        check(all(not l.startswith("gpudoctor_") for l in problems), problems[:3])

        # Owners: one join series per GPU and owner, nothing added to the other series; the
        # ledger of lost GPU time (docs/owners.md).
        owner_info = re.findall(r'^gpudoctor_gpu_owner_info\{([^}]*)\} 1$', text, re.M)
        check(len(owner_info) == 6, f"6 owner series (4 job, 2 notebook): {owner_info}")
        check(any('owner_kind="slurm_job",job="41877",step="0"' in l and 'user="alice"' in l
                  and 'Hostname="test-node"' in l for l in owner_info), owner_info[:2])
        check(any('owner_kind="k8s_pod"' in l and 'pod="notebook-bob-0"' in l
                  and 'namespace="research"' in l for l in owner_info), owner_info)
        others = [l for l in text.splitlines()
                  if not l.startswith(("#", "gpudoctor_gpu_owner_info")) and "job=" in l]
        check(not others, f"owner labels on other series: {others[:2]}")
        for family in ("gpudoctor_lost_gpu_seconds_total", "gpudoctor_gpu_seconds_total"):
            check(f"# TYPE {family} counter" in text, f"/metrics lacks {family}")
        idle = re.search(r'gpudoctor_lost_gpu_seconds_total\{gpu="4",[^}]*cause="idle"\} (\S+)',
                         text)
        check(idle is not None and float(idle.group(1)) > 0, f"GPU 4's idle ledger: {idle}")
        free = re.search(r'gpudoctor_gpu_seconds_total\{gpu="6",[^}]*state="free"\} (\S+)', text)
        check(free is not None and float(free.group(1)) > 0, f"GPU 6's free time: {free}")

        status, headers, data = http_get(f"http://{own}/metrics")
        rc, problems = promtool_problems(promtool, data.decode())
        check(rc == 0 and not problems, f"promtool check metrics (--no-dcgm-names): {problems}")
        check("DCGM_" not in data.decode() and "gpudoctor_energy_joules_total{" in data.decode(),
              "--no-dcgm-names output")

        # OpenMetrics when asked, as Prometheus asks.
        status, headers, data = http_get(
            f"http://{addr}/metrics",
            {"Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"})
        check(headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0"),
              headers["Content-Type"])
        check(data.endswith(b"# EOF\n"), "OpenMetrics ends with # EOF")

        # Process names only with --expose-process-names.
        check("gpudoctor_process_info" not in text, "process names without the flag")
        check("process_name=" not in http_get(f"http://{own}/metrics")[2].decode(),
              "process names without the flag")
        with_names = http_get(f"http://{procs_addr}/metrics")[2].decode()
        check(re.search(r'gpudoctor_process_info\{[^}]*pid="\d+",process_name="[^"]+"\} 1',
                        with_names), "gpudoctor_process_info with --expose-process-names")

        # /diagnosis: the JSON contract of `diagnose`.
        status, headers, data = http_get(f"http://{addr}/diagnosis")
        check(status == 200 and headers["Content-Type"] == "application/json", f"{status}")
        d = json.loads(data)
        jsonschema.validate(d, schema)
        check(d["source"] == "live: sim:mixed,speed=30", d["source"])
        check(len(d["gpus"]) == 8, "8 GPUs in /diagnosis")

        status, _, data = http_get(f"http://{addr}/healthz")
        check(status == 200 and data == b"ok\n", f"/healthz: {status} {data!r}")
        status, headers, data = http_get(f"http://{addr}/")
        check(status == 200 and b'href="metrics"' in data and "text/html" in headers["Content-Type"],
              "/ index page")
        check(http_get(f"http://{addr}/metrics/../etc/passwd")[0] == 404, "unknown path")
        check(http_get(f"http://{addr}/nope")[0] == 404, "unknown path")

        # Oversized, malformed and non-GET requests are refused; the server stays up.
        r = raw_request(addr, b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
        check(r.startswith(b"HTTP/1.1 431 "), f"oversized request: {r[:60]!r}")
        r = raw_request(addr, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n")
        check(r.startswith(b"HTTP/1.1 400 "), f"garbage: {r[:60]!r}")
        r = raw_request(addr, b"POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
        check(r.startswith(b"HTTP/1.1 413 "), f"a body: {r[:60]!r}")
        r = raw_request(addr, b"DELETE /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
        check(r.startswith(b"HTTP/1.1 405 "), f"DELETE: {r[:60]!r}")
        check(http_get(f"http://{addr}/metrics")[0] == 200, "still serving")

        # Through the NVML path (the stand-in library): a GPU whose driver takes 3 s to answer
        # never slows a scrape, as scrapes only read the latest snapshot.
        fake = os.path.join(os.path.dirname(os.path.dirname(binary)),
                            "tests/fake_nvml/libnvidia-ml.so.1")
        check(os.path.exists(fake), f"the stand-in NVML is not built: {fake}")
        env = dict(os.environ, GPUDOCTOR_NVML_LIB=fake, GPUDOCTOR_FAKE_NVML_CAPTURE=os.path.join(
            source, "tests/data/captures/faults-slow.json"))
        _, slow = start_serve(procs, binary, work, "slow", ["-i", "500ms"], env=env)
        worst = 0
        for _ in range(10):
            t = time.time()
            status, _, data = http_get(f"http://{slow}/metrics")
            worst = max(worst, time.time() - t)
            check(status == 200 and b"DCGM_FI_DEV_POWER_USAGE" in data, f"slow NVML: {status}")
            time.sleep(0.1)
        check(worst < 0.25, f"a scrape took {worst:.2f} s while NVML was slow")
        check(b'gpudoctor_scrape_success{source="nvml"}' in data, "the nvml source's health")

        # dcgm-exporter's 21 default counters through the NVML path: an H100 in training and an
        # L4 vGPU guest (tests/data/captures/counters-2gpu.json), from its sample at 4 s (XID 31).
        capture = os.path.join(source, "tests/data/captures/counters-2gpu.json")
        env = dict(os.environ, GPUDOCTOR_NVML_LIB=fake, GPUDOCTOR_FAKE_NVML_CAPTURE=capture,
                   GPUDOCTOR_FAKE_NVML_START_S="4")
        _, counters = start_serve(procs, binary, work, "counters", ["-i", "200ms"], env=env)
        default_counters = {  # dcgm-exporter's etc/default-counters.csv, with serve's types
            "DCGM_FI_DEV_SM_CLOCK": "gauge", "DCGM_FI_DEV_MEM_CLOCK": "gauge",
            "DCGM_FI_DEV_MEMORY_TEMP": "gauge", "DCGM_FI_DEV_GPU_TEMP": "gauge",
            "DCGM_FI_DEV_POWER_USAGE": "gauge", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "counter",
            "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": "gauge", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": "gauge",
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "counter", "DCGM_FI_DEV_GPU_UTIL": "gauge",
            "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge", "DCGM_FI_DEV_ENC_UTIL": "gauge",
            "DCGM_FI_DEV_DEC_UTIL": "gauge", "DCGM_FI_DEV_XID_ERRORS": "gauge",
            "DCGM_FI_DEV_FB_FREE": "gauge", "DCGM_FI_DEV_FB_USED": "gauge",
            "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "gauge",
            "DCGM_FI_DEV_VGPU_LICENSE_STATUS": "gauge",
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "counter",
            "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "counter",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE": "gauge"}
        deadline = time.time() + 10
        while True:  # the NVLink rate needs two samples
            text = http_get(f"http://{counters}/metrics")[2].decode()
            if "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{" in text or time.time() > deadline:
                break
            time.sleep(0.1)
        for name, kind in default_counters.items():
            check(f"# TYPE {name} {kind}\n" in text, f"stand-in /metrics lacks {name} ({kind})")
        # XID 31 (4 s), or XID 13 (9 s) on a machine slow enough to scrape that late.
        xid = re.search(r'\nDCGM_FI_DEV_XID_ERRORS\{gpu="0",UUID="[^"]+",pci_bus_id="[^"]+",'
                        r'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="[^"]*",'
                        r'err_code="(31|13)"\} (\S+)\n', text)
        check(xid and xid.group(1) == xid.group(2), f"XID with its err_code label: {xid}")
        check('DCGM_FI_DEV_XID_ERRORS{gpu="1"' not in text, "no XID series where events fail")
        check(re.search(r'\nDCGM_FI_DEV_VGPU_LICENSE_STATUS\{gpu="1",[^}]*\} 0\n', text)
              and 'DCGM_FI_DEV_VGPU_LICENSE_STATUS{gpu="0"' not in text, "vGPU license: guest only")
        check('DCGM_FI_DEV_MEMORY_TEMP{gpu="1"' not in text, "no memory temperature on GDDR")
        # The rate between two samples lies within the capture's rates around then (MiB/s),
        # in DCGM's unit: KiB/s / 1000.
        doc = json.load(open(capture))
        nvl = [s["values"]["nvlink_mibs"] for s in doc["devices"][0]["samples"]
               if 4 <= s["t_s"] <= 10]
        m = re.search(r'\nDCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL\{gpu="0",[^}]*\} (\S+)\n', text)
        check(m and 0.99 * min(nvl) * 1.024 <= float(m.group(1)) <= 1.01 * max(nvl) * 1.024,
              f"NVLink total in DCGM's MB/s: {m and m.group(1)} for {nvl[:2]}... MiB/s")
        rc, problems = promtool_problems(promtool, text)
        unexpected = [l for l in problems if not DCGM_LINT.match(l)]
        check(not unexpected, f"promtool check metrics (counters): {unexpected[:5]}")

        # SIGTERM stops it cleanly and at once.
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(10)
        check(rc == 0, f"serve exit status after SIGTERM: {rc}")
        check(time.time() - t0 < 3, f"serve took {time.time() - t0:.1f} s to stop")
        check("stopped" in open(p.stderr_path).read(), "serve says it stopped")

        # TLS and basic auth from a web configuration file.
        r = run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                 "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                 "/CN=gpudoctor-test", "-addext", "subjectAltName=IP:127.0.0.1",
                 "-keyout", os.path.join(work, "key.pem"), "-out", os.path.join(work, "cert.pem")])
        check(r.returncode == 0, f"openssl req: {r.stderr}")
        with open(os.path.join(work, "web.yml"), "w") as f:
            f.write("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                    f"basic_auth_users:\n  prometheus: '{SCRAPE_HASH}'\n")
        _, tls = start_serve(procs, binary, work, "tls",
                             ["--source", "sim:healthy,speed=30", "-i", "200ms",
                              "--web-config", os.path.join(work, "web.yml")])
        check("https://" in open(os.path.join(work, "serve-tls.err")).read(), "https address")
        ctx = ssl.create_default_context(cafile=os.path.join(work, "cert.pem"))
        status, headers, _ = http_get(f"https://{tls}/metrics", context=ctx)
        check(status == 401 and headers.get("WWW-Authenticate", "").startswith("Basic"),
              f"no credentials: {status}")
        bad = base64.b64encode(b"prometheus:wrong").decode()
        check(http_get(f"https://{tls}/metrics", {"Authorization": f"Basic {bad}"},
                       context=ctx)[0] == 401, "wrong password")
        good = base64.b64encode(b"prometheus:scrape-secret").decode()
        status, _, data = http_get(f"https://{tls}/metrics", {"Authorization": f"Basic {good}"},
                                   context=ctx)
        check(status == 200 and b"DCGM_FI_DEV_POWER_USAGE" in data, f"with credentials: {status}")
        r = raw_request(tls, b"GET /metrics HTTP/1.1\r\n\r\n")
        check(b"DCGM_" not in r, "plain HTTP to the TLS port")

        # Bad configurations are errors at start, with exit status 2.
        with open(os.path.join(work, "bad.yml"), "w") as f:
            f.write("basic_auth_users:\n  prometheus: plaintext\n")
        r = run([binary, "serve", "--source", "sim:healthy", "--listen", "127.0.0.1:0",
                 "--web-config", os.path.join(work, "bad.yml")], timeout=20)
        check(r.returncode == 2 and "bcrypt" in r.stderr, f"bad web config: {r.stderr}")
        r = run([binary, "serve", "--source", "sim:healthy", "--listen", "nowhere"], timeout=20)
        check(r.returncode == 2 and "--listen" in r.stderr, f"bad --listen: {r.stderr}")
        r = run([binary, "diagnose", "run.db", "--prometheus", "http://127.0.0.1:1"], timeout=20)
        check(r.returncode == 2 and "not both" in r.stderr, f"INPUT and --prometheus: {r.stderr}")
        r = run([binary, "diagnose", "--prometheus", "prometheus:9090"], timeout=20)
        check(r.returncode == 2 and "expected a URL" in r.stderr, f"bad URL: {r.stderr}")
        r = run([binary, "diagnose", "--prometheus", "http://127.0.0.1:9", "--since", "soon"],
                timeout=20)
        check(r.returncode == 2 and "--since soon" in r.stderr, f"bad --since: {r.stderr}")


if __name__ == "__main__":
    main(body)
