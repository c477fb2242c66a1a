#!/usr/bin/env python3
"""schedhot serve --web-config on this host (root), against the real things: a CA, server and
client certificates made here with the openssl CLI, a bcrypt hash from the system's libcrypt,
every web-config file passed through `promtool check web-config` (Prometheus's own check of
the format), and Debian's Prometheus scraping over HTTPS with the CA, a client certificate
and basic auth (target up). Then, with Python's ssl module: the right password gets the
metrics and the configured headers over TLS 1.3; a wrong password, an unknown user and no
credentials get 401 with `WWW-Authenticate: Basic realm="schedhot"`; plain HTTP to the port,
a TLS 1.2 client (min_version TLS13), a client without certificate and one whose
certificate another CA signed get no metrics. Bad files (unknown key, missing cert file,
non-bcrypt hash) exit 2 with one line before attaching; basic auth without TLS warns once.
Kills what it starts. Usage: serve_tls.py SCHEDHOT"""
import base64, ctypes, http.client, os, shutil, socket, ssl, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prometheus_util import Checks, Prometheus, stop  # noqa: E402

exe = sys.argv[1]
for tool in ("openssl", "promtool"):
    if not shutil.which(tool):
        print(f"FAIL {tool} is not installed (packaging/install-deps.sh installs it)")
        sys.exit(1)
sport, pport, aport = 19891, 19892, 19893
td = tempfile.mkdtemp()
t = Checks()
check = t.check


def path(name):
    return os.path.join(td, name)


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=td)


SERIALS = {"server": 2, "client": 3, "rogue": 4}


def cert(name, cn, ca, ext):
    """name.key and name.crt: a P-256 key and a certificate signed by ca (ca.key, ca.crt)."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", f"/CN={cn}")
    with open(path(f"{name}.ext"), "w") as fh:
        fh.write(ext + "\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-set_serial", str(SERIALS[name]),
            "-days", "1", "-out", f"{name}.crt", "-extfile", f"{name}.ext")


def bcrypt(password, cost=10):
    lc = ctypes.CDLL("libcrypt.so.1")
    lc.crypt_gensalt.restype = lc.crypt.restype = ctypes.c_char_p
    lc.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    lc.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return lc.crypt(password.encode(), lc.crypt_gensalt(b"$2b$", cost, None, 0)).decode()


def web_config(name, text):
    """Writes path(name) and returns promtool check web-config's (status, output) on it."""
    with open(path(name), "w") as fh:
        fh.write(text)
    r = subprocess.run(["promtool", "check", "web-config", path(name)], capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def client_ctx(cert="client", maxv=None):
    c = ssl.create_default_context(cafile=path("ca.crt"))
    if cert:
        c.load_cert_chain(path(f"{cert}.crt"), path(f"{cert}.key"))
    if maxv:
        c.maximum_version = maxv
    return c


def get(ctx, port=sport, auth=None):
    """(status, headers, body, TLS version) of GET /metrics; the exception when refused."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10) if ctx else \
        http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        h = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
        conn.connect()
        version = conn.sock.version() if ctx else None
        conn.request("GET", "/metrics", headers=h)
        r = conn.getresponse()
        body = r.read().decode()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body, version
    except (OSError, http.client.HTTPException) as e:
        return e
    finally:
        conn.close()


def refused(r):
    return not isinstance(r, tuple) or (r[0] != 200 and "schedhot_samples_total" not in r[2])


def run_bad(name, text):
    """schedhot serve on a bad file: (exit status, stderr, seconds)."""
    with open(path(name), "w") as fh:
        fh.write(text)
    t0 = time.time()
    r = subprocess.run([exe, "serve", "--listen", f"127.0.0.1:{aport}", "--web-config", path(name)],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return r.returncode, r.stderr, time.time() - t0


s = a = prom = None
try:
    # ---- certificates: one CA for the server and the client, another that nobody trusts
    t0 = time.time()
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
            "-out", "ca.crt", "-days", "1", "-subj", "/CN=schedhot test CA")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "rogue-ca.key",
            "-out", "rogue-ca.crt", "-days", "1", "-subj", "/CN=rogue CA")
    cert("server", "127.0.0.1", "ca", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth")
    cert("client", "prometheus", "ca", "extendedKeyUsage=clientAuth")
    cert("rogue", "prometheus", "rogue-ca", "extendedKeyUsage=clientAuth")
    password = "correct horse battery staple"
    hashed = bcrypt(password)
    print(f"certificates and a bcrypt hash ({hashed[:7]}...) in {time.time() - t0:.1f} s")

    # ---- the file under test: TLS 1.3 only, client certificates of our CA, basic auth, headers
    rc, out = web_config("web.yml", f"""# relative paths: to this file's directory
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS13
http_server_config:
  headers:
    X-Content-Type-Options: nosniff
    X-Frame-Options: deny
basic_auth_users:
  prometheus: {hashed}
""")
    check(rc == 0, f"promtool check web-config web.yml: {out}")
    s = subprocess.Popen([exe, "serve", "--listen", f"127.0.0.1:{sport}", "--web-config", path("web.yml"), "-i", "0.5"],
                         stderr=subprocess.PIPE, text=True)
    prom = Prometheus(td, pport, f"""  - job_name: schedhot
    scheme: https
    tls_config: {{ca_file: {path('ca.crt')}, cert_file: {path('client.crt')}, key_file: {path('client.key')}}}
    basic_auth: {{username: prometheus, password: {password!r}}}
    static_configs: [{{targets: ["127.0.0.1:{sport}"]}}]
""")
    r = subprocess.run(["promtool", "check", "config", prom.config], capture_output=True, text=True)
    check(r.returncode == 0, f"promtool check config (scheme https, tls_config, basic_auth): {r.stdout.strip()} {r.stderr.strip()}")
    t0 = time.time()
    target = prom.wait_up('schedhot_samples_total{job="schedhot"}')
    check(target is not None and target["lastError"] == "" and target["scrapeUrl"].startswith("https://"),
          f"Prometheus scrapes https://127.0.0.1:{sport}/metrics with its CA, a client certificate and basic auth: "
          + (f"up in {time.time() - t0:.1f} s, {target['lastScrapeDuration']:.3f} s a scrape" if target else "not up in 40 s"))
    if target is None:
        print(open(prom.log).read()[-2000:])
        sys.exit(1)
    up = prom.query('up{job="schedhot"}')
    check(bool(up) and up[0]["value"][1] == "1", f"up == 1: {up}")
    time.sleep(2)
    inc = prom.query("increase(schedhot_samples_total[3s])")
    check(bool(inc) and float(inc[0]["value"][1]) > 0, f"schedhot_samples_total grows between HTTPS scrapes: {inc}")

    # ---- the same server, by hand
    r = get(client_ctx(), auth=f"prometheus:{password}")
    ok = isinstance(r, tuple) and r[0] == 200 and "schedhot_samples_total" in r[2]
    check(ok and r[3] == "TLSv1.3", f"right password, client certificate: 200 with the metrics over {r[3] if ok else r}")
    if ok:
        check(r[1].get("x-frame-options") == "deny" and r[1].get("x-content-type-options") == "nosniff",
              f"http_server_config.headers on the answer: {r[1]}")
    for what, auth in (("wrong password", "prometheus:Tr0ub4dor&3"), ("unknown user", f"alice:{password}"),
                       ("no credentials", None), ("empty password", "prometheus:")):
        r = get(client_ctx(), auth=auth)
        check(isinstance(r, tuple) and r[0] == 401 and r[1].get("www-authenticate") == 'Basic realm="schedhot"'
              and "schedhot_" not in r[2],
              f"{what}: 401 with WWW-Authenticate: Basic realm=\"schedhot\" ({r if not isinstance(r, tuple) else (r[0], r[1].get('www-authenticate'))})")
    times = []
    for _ in range(5):
        t0 = time.time()
        get(client_ctx(), auth=f"prometheus:{password}")
        times.append(time.time() - t0)
    print(f"an authenticated HTTPS GET /metrics (bcrypt cost 10, new TLS 1.3 connection): {min(times) * 1e3:.0f} ms at best of 5")
    r = get(None, auth=f"prometheus:{password}")
    check(refused(r), f"plain HTTP to the TLS port: no metrics ({r if not isinstance(r, tuple) else r[:2]})")
    sock = socket.create_connection(("127.0.0.1", sport), timeout=5)
    sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    try:
        raw = sock.recv(200)
    except OSError as e:
        raw = repr(e).encode()
    sock.close()
    check(b"200 OK" not in raw and b"schedhot" not in raw, f"raw plain-text request to the TLS port: {raw[:60]!r}")
    r = get(client_ctx(maxv=ssl.TLSVersion.TLSv1_2), auth=f"prometheus:{password}")
    check(refused(r) and isinstance(r, ssl.SSLError), f"a TLS 1.2 client is refused (min_version TLS13): {r}")
    r = get(client_ctx(cert=None), auth=f"prometheus:{password}")
    check(refused(r), f"no client certificate is refused (RequireAndVerifyClientCert): {r}")
    r = get(client_ctx(cert="rogue"), auth=f"prometheus:{password}")
    check(refused(r), f"a client certificate from another CA is refused: {r}")
    why = r[2].strip("\n") if isinstance(r, tuple) else ""
    check(isinstance(r, tuple) and r[0] == 403 and "client certificate refused: " in why and not why.endswith(" "),
          f"... with 403 and one line of GnuTLS's reason, no trailing space: {why!r}")
    check(s.poll() is None, "schedhot serve still up after the refused clients")

    # ---- bad files: exit 2, one line, before attaching anything (fast: no BPF load)
    bad = [("unknown key", "unknown.yml",
            f"tls_server_config:\n  cert_file: {path('server.crt')}\n  key_file: {path('server.key')}\n  min_verison: TLS13\n",
            "line 4: tls_server_config.min_verison: unknown key"),
           ("missing cert file", "nocert.yml", f"tls_server_config:\n  cert_file: absent.crt\n  key_file: {path('server.key')}\n",
            f"tls_server_config.cert_file {path('absent.crt')}: No such file or directory"),
           ("non-bcrypt hash", "plainhash.yml", "basic_auth_users:\n  prometheus: correct-horse\n",
            "line 2: basic_auth_users.prometheus: not a bcrypt hash"),
           # issue 28 item 10: never a passphrase prompt (there was one, twice, on the terminal)
           ("encrypted key_file", "enckey.yml", f"tls_server_config:\n  cert_file: {path('server.crt')}\n  key_file: {path('server-enc.key')}\n",
            f"tls_server_config.key_file {path('server-enc.key')}: an encrypted private key")]
    openssl("pkey", "-in", "server.key", "-aes256", "-passout", "pass:secret", "-out", "server-enc.key")
    openssl("ec", "-in", "server.key", "-aes256", "-passout", "pass:secret", "-out", "server-enc-trad.key")
    bad.append(("encrypted key_file (traditional PEM)", "enckey2.yml",
                f"tls_server_config:\n  cert_file: {path('server.crt')}\n  key_file: {path('server-enc-trad.key')}\n",
                "an encrypted private key"))
    for what, name, text, want in bad:
        rc, err, dt = run_bad(name, text)
        prc, pout = web_config(name, text)
        lines = err.strip().splitlines()
        check(rc == 2 and len(lines) == 1 and want in lines[0] and path(name) in lines[0],
              f"{what}: exit {rc}, one line naming the file and key in {dt:.2f} s: {lines}")
        check(prc != 0, f"{what}: promtool check web-config refuses it too: {pout.splitlines()[-1] if pout else ''}")
    # GnuTLS cannot keep a list of TLS 1.2 suites exactly: refused with one line (promtool takes it)
    rc, err, dt = run_bad("ciphers.yml", f"tls_server_config:\n  cert_file: {path('server.crt')}\n  key_file: {path('server.key')}\n"
                          "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n")
    lines = err.strip().splitlines()
    check(rc == 2 and len(lines) == 1 and "cipher_suites" in lines[0] and "GnuTLS" in lines[0],
          f"a TLS 1.2 cipher_suites list: exit {rc}, one line: {lines}")

    # ---- basic auth over plain HTTP: allowed (as in Prometheus), warned about once
    rc, out = web_config("auth-only.yml", f"basic_auth_users:\n  prometheus: {hashed}\n")
    check(rc == 0, f"promtool check web-config auth-only.yml: {out}")
    a = subprocess.Popen([exe, "serve", "--listen", f"127.0.0.1:{aport}", "--web-config", path("auth-only.yml"), "-q", "-i", "0.5"],
                         stderr=subprocess.PIPE, text=True)
    r = None
    for _ in range(100):
        r = get(None, aport, auth=f"prometheus:{password}")
        if isinstance(r, tuple) and r[0] == 200:
            break
        time.sleep(0.2)
    check(isinstance(r, tuple) and r[0] == 200 and "schedhot_samples_total" in r[2], "auth only, plain HTTP: the right password gets the metrics")
    r = get(None, aport)
    check(isinstance(r, tuple) and r[0] == 401, f"auth only, plain HTTP: no credentials get 401 ({r if not isinstance(r, tuple) else r[0]})")
    stop(a)
    warn = [ln for ln in a.stderr.read().splitlines() if "warning" in ln]
    check(len(warn) == 1 and "basic auth without tls_server_config" in warn[0], f"warned once about basic auth without TLS: {warn}")
finally:
    stop(prom and prom.proc, s, a)
    if s is not None:
        print("schedhot serve said: " + " | ".join(s.stderr.read().strip().splitlines()[-3:]))
    shutil.rmtree(td, ignore_errors=True)
sys.exit(t.exit_status())
