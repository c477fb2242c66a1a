"""Shared by the serve tests (serve_prometheus.py, serve_tls.py, serve_options.py,
serve_slowloris.py, serve_auth_flood.py): ok/FAIL checks, one raw HTTP exchange on a new
loopback connection, Debian's Prometheus started on loopback with a generated scrape config
and read through its HTTP API, and stopping what a test started."""
import json, os, shutil, socket, subprocess, sys, time, urllib.parse, urllib.request


class Checks:
    """ok/FAIL lines; exit_status() is 1 when any check failed."""

    def __init__(self):
        self.failures = []

    def check(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            self.failures.append(what)
        return cond

    def exit_status(self):
        print("%d failure(s)" % len(self.failures))
        return 1 if self.failures else 0


def exchange(port, data, host="127.0.0.1", family=socket.AF_INET, source=None, timeout=10.0):
    """(seconds, reply bytes) of data sent on a new connection to host:port, read until the
    server closes; the reply is b"error: ..." when connecting, sending or reading failed.
    source: the local address to connect from (127.0.0.2 and up: another client)."""
    t0 = time.monotonic()
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        if source:
            s.bind((source, 0))
        s.connect((host, port))
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        return time.monotonic() - t0, out
    except OSError as e:
        return time.monotonic() - t0, f"error: {e}".encode()
    finally:
        s.close()


class Prometheus:
    """Debian's prometheus on 127.0.0.1:port, scraping every second with the given
    scrape_configs entry (YAML text, indented as a list item), storing in td."""

    def __init__(self, td, port, scrape_config):
        exe = shutil.which("prometheus")
        if not exe:
            print("FAIL prometheus is not installed (packaging/install-deps.sh installs it)")
            sys.exit(1)
        self.port = port
        self.config = os.path.join(td, "prometheus.yml")
        with open(self.config, "w") as fh:
            fh.write("global: {scrape_interval: 1s, scrape_timeout: 900ms}\nscrape_configs:\n" + scrape_config)
        self.log = os.path.join(td, "prometheus.log")
        self.proc = subprocess.Popen([exe, f"--config.file={self.config}", f"--storage.tsdb.path={td}/data",
                                      f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))

    def api(self, path, **q):
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}" + ("?" + urllib.parse.urlencode(q) if q else "")
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)["data"]

    def query(self, expr, **q):
        return self.api("query", query=expr, **q)["result"]

    def wait_up(self, metric, timeout=40):
        """The first active target once it is up and metric is stored; None after timeout s."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            time.sleep(1)
            try:
                ts = self.api("targets")["activeTargets"]
                if ts and ts[0]["health"] == "up" and self.query(metric):
                    return ts[0]
            except OSError:
                continue
        try:
            last = self.api("targets")["activeTargets"]
            print(f"targets after {timeout} s: {[(t['health'], t['lastError']) for t in last]}")
        except OSError as e:
            print(f"Prometheus API: {e}")
        return None


def stop(*procs):
    """SIGTERM, then SIGKILL after 10 s, for each process started (None skipped)."""
    for p in procs:
        if p is None or p.poll() is not None:
            continue
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
