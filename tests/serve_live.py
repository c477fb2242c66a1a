#!/usr/bin/env python3
"""schedhot serve on this host (root): promtool check metrics on both formats, hostile
clients (POST, unknown path, '..', 1 MB header, slowloris, 200 idle connections) while
/metrics keeps answering, and --textfile always complete. Kills what it starts."""
import os, re, socket, subprocess, sys, tempfile, threading, time, urllib.request
exe = sys.argv[1]
port = 19871
td = tempfile.mkdtemp()
p = subprocess.Popen([exe, "serve", "--listen", f"127.0.0.1:{port}", "-i", "0.2", "--textfile", td, "-q"])
def get(path="/metrics", method="GET", accept=None, timeout=20):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    if accept: req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r: return r.status, r.read().decode()
    except urllib.error.HTTPError as e: return e.code, ""
def raw(data, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data); return s.recv(200).decode(errors="replace")
    except OSError as e: return f"cut: {e}"
    finally: s.close()
fails = []
def check(c, msg):
    print(("ok   " if c else "FAIL ") + msg)
    if not c: fails.append(msg)
try:
    for _ in range(100):
        try:
            if get(timeout=1)[0] == 200: break
        except OSError: pass
        time.sleep(0.1)
    st, body = get()
    r = subprocess.run(["promtool", "check", "metrics"], input=body, text=True, capture_output=True)
    check(st == 200 and r.returncode == 0 and "schedhot_samples_total" in body, f"promtool check metrics (0.0.4): {r.stdout}{r.stderr}")
    # promtool 2.42 lints only the 0.0.4 format; OpenMetrics: the framing and the info type
    st, om = get(accept="application/openmetrics-text; version=1.0.0")
    check(st == 200 and om.endswith("# EOF\n") and "# TYPE schedhot_probe info" in om, "OpenMetrics text when asked")
    check(get(method="POST")[0] == 405, "POST /metrics: 405")
    # HEAD: the headers GET would send (Content-Length of its body), and no body (RFC 9110)
    for path in ("/", "/metrics"):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"HEAD " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        resp = b""
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            resp += chunk
        s.close()
        head, _, rest = resp.partition(b"\r\n\r\n")
        m = re.search(rb"Content-Length: (\d+)", head)
        check(head.startswith(b"HTTP/1.1 200") and m and int(m.group(1)) > 0 and rest == b"",
              f"HEAD {path}: 200, Content-Length {m and int(m.group(1))}, body {len(rest)} bytes (want 0)")
    check(get("/nope")[0] == 404, "GET /nope: 404")
    # F6: only the exact paths; libmicrohttpd decoded %00 to a NUL that cut the path to /metrics
    def status(target):
        reply = raw(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        return reply.split(" ")[1] if reply.startswith("HTTP/1.1 ") else reply[:40]
    for target in ("/metrics%00.txt", "/metrics%00", "/metrics%3Fx", "//metrics", "/metrics/", "/metrics.txt",
                   "/metrics%2F", "/./metrics", "/METRICS", "%2Fmetrics"):
        check(status(target) == "404", f"GET {target}: 404 ({status(target)})")
    for target in ("/metrics%zz", "/metrics%4"):
        check(status(target) == "400", f"GET {target}: 400, a malformed escape ({status(target)})")
    for target in ("/metrics?x=1", "/metric%73", f"http://127.0.0.1:{port}/metrics?a=%00"):
        check(status(target) == "200", f"GET {target}: 200, the same path ({status(target)})")
    check(raw(b"GET /../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n").split(" ")[1:2] in (["404"], ["400"]), "GET /../etc/passwd: 404 or 400")
    big = raw(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20) + b"\r\n\r\n")
    check(" 200 " not in big, f"1 MB header refused: {big[:40]!r}")
    many = raw(b"GET /metrics HTTP/1.1\r\n" + b"".join(b"H%d: v\r\n" % i for i in range(500)) + b"\r\n")
    # libmicrohttpd keeps a request head within its 32 KiB per connection (headers and their
    # bookkeeping): 500 headers get 431, bounded (civetweb kept 64 and dropped the rest)
    check(many.startswith("HTTP/1.1 200") or " 400 " in many or " 431 " in many, f"500 headers: bounded ({many[:20]!r})")
    # slowloris: one byte a second for 6 s must be cut by the 2 s request timeout
    s = socket.create_connection(("127.0.0.1", port)); cut = False
    for b in b"GET /metrics HTTP/1.1\r\n":
        try: s.send(bytes([b])); time.sleep(1)
        except OSError: cut = True; break
        if time.time() and s.fileno() < 0: break
    try: s.settimeout(0.5); cut = cut or s.recv(100) == b""
    except OSError: cut = True
    s.close(); check(cut, "slow client cut off")
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
    t0 = time.time(); st, _ = get(timeout=30); dt = time.time() - t0
    check(st == 200, f"/metrics answers with 200 idle connections open ({dt:.1f} s)")
    for s in idle: s.close()
    rss = int(open(f"/proc/{p.pid}/status").read().split("VmRSS:")[1].split()[0])
    print(f"RSS after the hostile clients: {rss} kB"); check(rss < 200000, "RSS bounded (< 200 MB)")
    bad = 0
    for _ in range(200):
        try: t = open(os.path.join(td, "schedhot.prom")).read()
        except FileNotFoundError: continue
        if not t.rstrip().endswith(tuple("0123456789")) or "schedhot_bpf_stats_enabled" not in t: bad += 1
        time.sleep(0.01)
    check(bad == 0, f"textfile always complete ({bad} partial reads of 200)")
    check(p.poll() is None, "server still up")
finally:
    p.terminate(); p.wait(10)
sys.exit(1 if fails else 0)
