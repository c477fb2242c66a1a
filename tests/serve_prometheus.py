#!/usr/bin/env python3
"""A real Prometheus (Debian's, started here) scrapes `schedhot serve` on this host (root):
the target is up with no scrape error (Prometheus asks for OpenMetrics first, so that
parser takes the text), schedhot_samples_total grows between scrapes, every probe's info series is stored
with its attach status, and idle residency's histogram gives PromQL's histogram_quantile
a p99 (a host that idles always has idle exits).
Kills what it starts. Usage: serve_prometheus.py SCHEDHOT"""
import json, os, shutil, subprocess, sys, tempfile, time, urllib.parse, urllib.request

exe = sys.argv[1]
prom = shutil.which("prometheus")
if not prom:
    print("FAIL prometheus is not installed (packaging/install-deps.sh installs it)")
    sys.exit(1)
sport, pport = 19881, 19882
td = tempfile.mkdtemp()
with open(os.path.join(td, "prometheus.yml"), "w") as fh:
    fh.write(f"""global: {{scrape_interval: 1s, scrape_timeout: 900ms}}
scrape_configs:
  - job_name: schedhot
    static_configs: [{{targets: ["127.0.0.1:{sport}"]}}]
""")
fails = []


def check(c, msg):
    print(("ok   " if c else "FAIL ") + msg, flush=True)
    if not c:
        fails.append(msg)


def api(path, **q):
    url = f"http://127.0.0.1:{pport}/api/v1/{path}" + ("?" + urllib.parse.urlencode(q) if q else "")
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)["data"]


def query(expr):
    return api("query", query=expr)["result"]


s = subprocess.Popen([exe, "serve", "--listen", f"127.0.0.1:{sport}", "-i", "0.5", "-q"])
p = subprocess.Popen([prom, f"--config.file={td}/prometheus.yml", f"--storage.tsdb.path={td}/data",
                      f"--web.listen-address=127.0.0.1:{pport}", "--log.level=warn"],
                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(td, "prometheus.log"), "w"))
try:
    target = None
    deadline = time.time() + 40
    while time.time() < deadline:
        time.sleep(1)
        try:
            ts = api("targets")["activeTargets"]
        except OSError:
            continue
        if ts and ts[0]["health"] == "up" and query('schedhot_samples_total{job="schedhot"}'):
            target = ts[0]
            break
    check(target is not None, f"Prometheus scraped schedhot (target up within 40 s): {target and target['lastError']}")
    if target is None:
        sys.exit(1)
    check(target["lastError"] == "", f"no scrape error: {target['lastError']!r}")
    time.sleep(3)
    first = float(query("schedhot_samples_total")[0]["value"][1])
    inc = query("increase(schedhot_samples_total[3s])")
    check(bool(inc) and float(inc[0]["value"][1]) > 0, f"schedhot_samples_total grows between scrapes (now {first:g}): {inc}")
    probes = json.loads(subprocess.run([exe, "probes", "--json"], capture_output=True, text=True).stdout or "{}").get("probes")
    info = query("schedhot_probe_info")
    stored = {r["metric"]["probe"]: r["metric"]["attached"] for r in info}
    print(f"stored probe info: {stored}")
    if isinstance(probes, list):
        want = {x["probe"]: "true" if x.get("attached") else "false" for x in probes if "probe" in x}
        check(bool(want) and stored == want,
              f"every probe's info series is stored with the attach status `schedhot probes` gives: {want}")
    else:
        check(len(stored) >= 4, f"the probes' info series are stored ({len(stored)})")
    attached = [k for k, v in stored.items() if v == "true"]
    hists = query('count by (__name__) ({__name__=~"schedhot_.*_seconds_bucket"})')
    check(not attached or bool(hists), f"histograms stored for the attached probes {attached}: {[h['metric'] for h in hists]}")
    if hists:
        names = [h["metric"]["__name__"] for h in hists]
        name = "schedhot_idle_lat_seconds_bucket" if "schedhot_idle_lat_seconds_bucket" in names else names[0]
        q = query(f"histogram_quantile(0.99, sum by (le) ({name}))")
        v = float(q[0]["value"][1]) if q else float("nan")
        print(f"histogram_quantile(0.99, {name}) = {v} s")
        idle = name == "schedhot_idle_lat_seconds_bucket"
        check(bool(q) and ((0 < v <= 1.1) if idle else (v != v or 0 <= v <= 1.1)), f"histogram_quantile answers on {name} ({v} s)")
        les = query(f"count({name})")
        check(bool(les) and int(les[0]["value"][1]) == 26, f"{name}: 26 buckets (2^6..2^30 ns and +Inf): {les}")
    check(s.poll() is None, "schedhot serve still up")
finally:
    for x in (p, s):
        x.terminate()
        try:
            x.wait(10)
        except subprocess.TimeoutExpired:
            x.kill()
    shutil.rmtree(td, ignore_errors=True)
sys.exit(1 if fails else 0)
