#!/usr/bin/env python3
"""schedhot serve with basic auth under a flood of wrong passwords (issue 28 item 5), loopback
only: 150 threads of wrong guesses at bcrypt cost 10 from 127.0.0.2 while the real scraper,
whose password passed once, scrapes every 0.3 s from 127.0.0.1 (from one address, the
guessers' tens of thousands of connections, which serve closes first, would leave the
scraper's new connections colliding with the server's TIME_WAIT ones: a 1 s SYN retry):
its scrapes must not queue behind the bcrypt checks (median < 100 ms, none over 1 s), and one address's failed checks are rate-limited (429
beyond a small budget). Then cost 16 (about 3 s a check) with 40 threads from 40 addresses:
SIGTERM must end serve within 2 s. Prints the figures. Starts and stops serve itself.
Usage: serve_auth_flood.py SCHEDHOT"""
import base64, ctypes, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time
from prometheus_util import Checks, exchange

exe = sys.argv[1]
port = 19896
td = tempfile.mkdtemp()
checks = Checks()
check, fails = checks.check, checks.failures


def bcrypt(password, cost):
    lc = ctypes.CDLL("libcrypt.so.1")
    lc.crypt_gensalt.restype = lc.crypt.restype = ctypes.c_char_p
    lc.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    lc.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return lc.crypt(password.encode(), lc.crypt_gensalt(b"$2b$", cost, None, 0)).decode()


def get(auth, source="127.0.0.1", timeout=30.0):
    """(seconds, status code or error text) of GET /metrics with basic auth user:password."""
    h = base64.b64encode(auth.encode()).decode()
    dt, data = exchange(port, f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {h}\r\nConnection: close\r\n\r\n".encode(),
                        source=source, timeout=timeout)
    line = data.split(b"\r\n", 1)[0].decode(errors="replace")
    return dt, int(line.split()[1]) if line.startswith("HTTP/1.1 ") else line


def start(hashed):
    cfg = os.path.join(td, "web.yml")
    with open(cfg, "w") as fh:
        fh.write(f"basic_auth_users:\n  prometheus: {hashed}\n")
    p = subprocess.Popen([exe, "serve", "--listen", f"127.0.0.1:{port}", "--web-config", cfg, "-i", "0.5", "-q"],
                         stderr=subprocess.PIPE, text=True)
    for _ in range(150):
        if p.poll() is not None:
            break
        dt, st = get("prometheus:" + PASSWORD, timeout=20)
        if st == 200:
            return p
        time.sleep(0.2)
    check(False, f"serve answers the right password ({st})")
    p.kill()
    sys.exit(1)


def stop(p):
    if p.poll() is None:
        p.kill()
    p.wait()


PASSWORD = "correct horse battery staple"
p = None
try:
    # ---- cost 10: the real scraper under 150 threads of wrong guesses
    p = start(bcrypt(PASSWORD, 10))
    base = [get("prometheus:" + PASSWORD)[0] for _ in range(5)]
    print(f"cost 10, no flood: a remembered scrape takes {statistics.median(base) * 1e3:.1f} ms (median of 5)", flush=True)
    stop_flood = threading.Event()
    counts = {}
    lock = threading.Lock()

    def guess(i):
        n = 0
        while not stop_flood.is_set() and n < 2000:
            n += 1
            _, st = get(f"prometheus:wrong{i}-{n}", source="127.0.0.2", timeout=30)
            with lock:
                counts[st] = counts.get(st, 0) + 1

    threads = [threading.Thread(target=guess, args=(i,), daemon=True) for i in range(150)]
    for t in threads:
        t.start()
    time.sleep(1)
    times, statuses = [], []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 6 and len(times) < 25:
        dt, st = get("prometheus:" + PASSWORD)
        times.append(dt)
        statuses.append(st)
        time.sleep(0.3)
    flood_s = time.monotonic() - t0 + 1
    stop_flood.set()
    for t in threads:
        t.join(40)
    ms = sorted(x * 1e3 for x in times)
    print(f"cost 10, 150 threads of wrong guesses: {len(ms)} right scrapes, median {statistics.median(ms):.1f} ms, "
          f"max {ms[-1]:.1f} ms; the guesses got {dict(sorted(counts.items(), key=str))} in {flood_s:.0f} s", flush=True)
    check(all(s == 200 for s in statuses), f"every right scrape 200 during the flood ({set(statuses)})")
    check(statistics.median(ms) < 100 and ms[-1] < 1000, f"right scrapes not queued behind bcrypt: median {statistics.median(ms):.1f} ms "
          f"< 100 ms, max {ms[-1]:.1f} ms < 1 s")
    checked = counts.get(401, 0)
    check(counts.get(429, 0) > 0 and checked <= 5 + 2 * flood_s + 10,
          f"one address's failed checks rate-limited: {checked} wrong guesses checked (401), {counts.get(429, 0)} refused unchecked (429)")
    check(p.poll() is None, "serve still up after the flood")
    stop(p)

    # ---- cost 16: SIGTERM while 40 addresses keep the checker busy
    t0 = time.monotonic()
    slow = bcrypt(PASSWORD, 16)
    print(f"a bcrypt hash at cost 16 made in {time.monotonic() - t0:.1f} s", flush=True)
    p = start(slow)
    stop_flood.clear()

    def guess16(i):
        n = 0
        while not stop_flood.is_set() and n < 50:
            n += 1
            get(f"prometheus:wrong{i}-{n}", source=f"127.0.1.{i + 1}", timeout=300)

    threads = [threading.Thread(target=guess16, args=(i,), daemon=True) for i in range(40)]
    for t in threads:
        t.start()
    time.sleep(4)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        pass
    dt = time.monotonic() - t0
    code = p.poll()
    print(f"cost 16, 40 addresses guessing: SIGTERM to exit {dt:.2f} s (exit {code})", flush=True)
    check(code is not None and dt < 2, f"SIGTERM ends serve within 2 s during a cost-16 flood ({dt:.2f} s, exit {code})")
    stop_flood.set()
    stop(p)
finally:
    if p is not None:
        stop(p)
        tail = p.stderr.read().strip().splitlines()[-3:]
        if tail:
            print("schedhot serve said: " + " | ".join(tail))
    shutil.rmtree(td, ignore_errors=True)
print(f"{len(fails)} failure(s)")
sys.exit(1 if fails else 0)
