#!/usr/bin/env python3
"""schedhot serve's options and HTTP edges (issue 28 items 4, 9, 13, 14), loopback only:
--timeout-ms negative or 0: exit 2; --listen checked before anything attaches (a bare port,
port 0 and 99999: exit 2; a port in use: one line naming the address, non-zero, in well under
the time attaching takes); [::1]:PORT and :PORT (every address, IPv4 and IPv6) serve and print
a real URL; --textfile on a regular file: exit 2; its directory deleted while serving: one
warning, HTTP goes on; schedhot.prom removed when serve stops (only if still serve's file);
links planted at the former fixed temporary name and at schedhot.prom not written through, a
FIFO there not blocking serve, a directory others write to warned about; an absolute-form request line
and OPTIONS * answered; http_server_config.headers on every reply, errors included.
Starts and stops what it needs. Usage: serve_options.py SCHEDHOT"""
import os, re, shutil, signal, socket, subprocess, sys, tempfile, time
from prometheus_util import Checks, exchange

exe = sys.argv[1]
port = 19897
td = tempfile.mkdtemp()
checks = Checks()
check, fails = checks.check, checks.failures


def run(*args, timeout=20):
    """schedhot serve that is to stop by itself: (exit status, stderr lines, seconds); status
    None when it was still running after timeout s (then it is killed)."""
    t0 = time.monotonic()
    p = subprocess.Popen([exe, "serve", *args], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        return None, err.strip().splitlines() + [f"(still running after {timeout} s: killed)"], time.monotonic() - t0
    return p.returncode, err.strip().splitlines(), time.monotonic() - t0


def raw(data, host="127.0.0.1", family=socket.AF_INET, p=port, timeout=10):
    """The whole reply to data sent on a new connection (b"" when none)."""
    return exchange(p, data, host, family, timeout=timeout)[1]


def start(*args):
    p = subprocess.Popen([exe, "serve", "-i", "0.3", *args], stderr=subprocess.PIPE, text=True)
    return p


def wait_200(host="127.0.0.1", family=socket.AF_INET, p=port, proc=None):
    for _ in range(150):
        if proc is not None and proc.poll() is not None:
            return False
        if raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", host, family, p, 2).startswith(b"HTTP/1.1 200"):
            return True
        time.sleep(0.2)
    return False


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.stderr.read().strip().splitlines()


procs, mounts = [], []
try:
    # ---- item 4: --timeout-ms
    for v in ("-1", "0", "-2000"):
        rc, err, dt = run("--listen", f"127.0.0.1:{port}", "--timeout-ms", v)
        check(rc == 2 and len(err) == 1 and "--timeout-ms" in err[0], f"--timeout-ms {v}: exit {rc}, {err}")

    # ---- item 9: --listen checked before attaching
    for v, what in (("19894", "a bare port"), ("127.0.0.1:0", "port 0"), ("127.0.0.1:99999", "port 99999"),
                    ("127.0.0.1:", "no port"), ("[::1]", "an IPv6 address without a port"),
                    ("[::1:9870", "a broken IPv6 address"), ("nosuchhost:9870", "a host name"),
                    ("127.0.0.1: 19894", "a space before the port"), ("127.0.0.1:+19894", "a signed port"),
                    ("[::ffff:127.0.0.1]:19894", "an IPv4-mapped IPv6 address")):
        rc, err, dt = run("--listen", v)
        check(rc == 2 and len(err) == 1 and v in err[0], f"--listen {v} ({what}): exit {rc} in {dt:.2f} s: {err}")
        if v == "[::1]":
            check("no port" in err[0], f"--listen [::1] says it has no port (not a port '1]'): {err}")
        if v == "19894":
            check("a port without an address" in err[0], f"--listen 19894 says what is missing (the address): {err}")
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    bport = busy.getsockname()[1]
    rc, err, dt = run("--listen", f"127.0.0.1:{bport}")
    busy.close()
    check(rc != 0 and len(err) == 1 and f"127.0.0.1:{bport}" in err[0] and "in use" in err[0],
          f"--listen on a port in use: exit {rc}, one line naming the address, in {dt:.2f} s (before attaching): {err}")

    # [::1]:PORT
    p = start("--listen", f"[::1]:{port}")
    procs.append(p)
    ok = wait_200("::1", socket.AF_INET6, proc=p)
    check(ok, f"--listen [::1]:{port}: GET /metrics over IPv6 answers 200")
    err = stop(p)
    check(any(f"http://[::1]:{port}/metrics" in ln for ln in err), f"[::1]: the printed URL: {err[:1]}")
    # :PORT: every address, both families
    p = start("--listen", f":{port}")
    procs.append(p)
    ok4 = wait_200(proc=p)
    ok6 = ok4 and raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "::1", socket.AF_INET6).startswith(b"HTTP/1.1 200")
    check(ok4 and ok6, f"--listen :{port}: 200 on 127.0.0.1 ({ok4}) and on ::1 ({ok6})")
    err = stop(p)
    check(any(f":{port}/metrics" in ln and "every address" in ln for ln in err), f":PORT: the printed URL: {err[:1]}")

    # ---- item 13: --textfile
    regular = os.path.join(td, "afile")
    open(regular, "w").close()
    rc, err, dt = run("--listen", "", "--textfile", regular)
    check(rc == 2 and len(err) == 1 and "not a directory" in err[0], f"--textfile on a regular file: exit {rc} in {dt:.2f} s: {err}")
    tdir = os.path.join(td, "text")
    os.mkdir(tdir)
    web = os.path.join(td, "web.yml")
    with open(web, "w") as fh:
        fh.write("http_server_config:\n  headers:\n    X-Frame-Options: deny\n    X-Content-Type-Options: nosniff\n")
    p = start("--listen", f"127.0.0.1:{port}", "--textfile", tdir, "--web-config", web)
    procs.append(p)
    check(wait_200(proc=p), "serve with --textfile answers")
    prom = os.path.join(tdir, "schedhot.prom")
    for _ in range(50):
        if os.path.exists(prom):
            break
        time.sleep(0.1)
    check(os.path.exists(prom), "schedhot.prom written")
    # ---- item 14: absolute form, OPTIONS *, headers on every reply
    def headers_ok(reply):
        head = reply.split(b"\r\n\r\n", 1)[0]
        return b"X-Frame-Options: deny" in head and b"X-Content-Type-Options: nosniff" in head

    cases = [
        ("absolute-form GET", f"GET http://127.0.0.1:{port}/metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n", b"HTTP/1.1 200", b"schedhot_samples_total"),
        ("absolute-form with a query", f"GET http://127.0.0.1:{port}/metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"HTTP/1.1 200", b"schedhot_samples_total"),
        ("OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"HTTP/1.1 200", b"Allow: GET, HEAD, OPTIONS"),
        ("GET *", "GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"HTTP/1.1 400", b""),
        ("404", "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 404", b""),
        ("405", "DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 405", b""),
        ("HTTP/1.1 without Host", "GET /metrics HTTP/1.1\r\n\r\n", b"HTTP/1.1 400", b""),
    ]
    for what, req, want, body in cases:
        r = raw(req.encode())
        first = r.split(b"\r\n", 1)[0]
        check(r.startswith(want) and body in r and headers_ok(r),
              f"{what}: {want.decode()} with the configured headers ({first!r}, headers {headers_ok(r)})")
    # What libmicrohttpd answers itself, before any handler (README "Limits": no configured
    # header there): an error status or nothing, never the metrics.
    for what, req, want in (("HTTP/2.0 request line", "GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n", (b"HTTP/1.1 505",)),
                            ("malformed request line", "GET\r\n\r\n", (b"", b"HTTP/1.1 400")),
                            ("a 64 KiB header", "GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + "a" * 65536 + "\r\n\r\n",
                             (b"HTTP/1.1 431", b"HTTP/1.1 413", b""))):
        r = raw(req.encode())
        first = r.split(b"\r\n", 1)[0]
        check(any(first.startswith(w) if w else first == b"" for w in want) and b"schedhot_" not in r,
              f"{what}: libmicrohttpd's own {first.decode() or 'close without a reply'}, no metrics (configured headers: {headers_ok(r)})")
    shutil.rmtree(tdir)
    time.sleep(1.5)
    r = raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    check(p.poll() is None and r.startswith(b"HTTP/1.1 200"), f"--textfile directory deleted: serve goes on, HTTP 200 ({r[:20]!r})")

    err = stop(p)
    warn = [ln for ln in err if "--textfile" in ln]
    check(len(warn) == 1 and "warning" in warn[0], f"--textfile directory deleted: warned once: {warn}")

    # ---- item 13: schedhot.prom leaves with serve
    os.mkdir(tdir)
    p = start("--listen", "", "--textfile", tdir, "-q")
    procs.append(p)
    for _ in range(100):
        if os.path.exists(prom) or p.poll() is not None:
            break
        time.sleep(0.1)
    had = os.path.exists(prom)
    stop(p)
    check(had and not os.path.exists(prom) and not os.listdir(tdir),
          f"schedhot.prom written while serving ({had}), removed when serve stops (left: {os.listdir(tdir)})")

    # ---- --textfile in a directory another user writes to (planted here as root; the same
    # names another user could plant): a link at the former fixed temporary name and at
    # schedhot.prom must not make serve write through it, a FIFO there must not block it.
    def wait_prom(d, proc, timeout=20):
        f = os.path.join(d, "schedhot.prom")
        end = time.monotonic() + timeout
        while time.monotonic() < end and proc.poll() is None:
            try:
                if not os.path.islink(f) and b"schedhot_samples_total" in open(f, "rb").read():
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def stop_timed(proc):
        """SIGTERM: (seconds to exit, None when still running after 10 s, stderr lines)."""
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
            dt = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            dt = None
        return dt, proc.stderr.read().strip().splitlines()

    victim_tmp, victim_prom = os.path.join(td, "victim_tmp"), os.path.join(td, "victim_prom")
    for v in (victim_tmp, victim_prom):
        with open(v, "w") as fh:
            fh.write("victim\n")
    ldir = os.path.join(td, "planted_links")
    os.mkdir(ldir)
    os.chmod(ldir, 0o777)  # others may write, no sticky bit: serve warns
    os.symlink(victim_tmp, os.path.join(ldir, ".schedhot.prom.tmp"))
    os.symlink(victim_prom, os.path.join(ldir, "schedhot.prom"))
    p = start("--listen", "", "--textfile", ldir, "-q")
    procs.append(p)
    wrote = wait_prom(ldir, p)
    victims = [open(v).read() for v in (victim_tmp, victim_prom)]
    check(wrote and victims == ["victim\n", "victim\n"],
          f"--textfile with links planted at .schedhot.prom.tmp and schedhot.prom: schedhot.prom written as a file "
          f"({wrote}), the linked files untouched ({victims})")
    dt, err = stop_timed(p)
    left = sorted(os.listdir(ldir))
    check(left == [".schedhot.prom.tmp"] and os.path.islink(os.path.join(ldir, ".schedhot.prom.tmp")),
          f"links planted: at exit only serve's own schedhot.prom removed, the planted link left, no temporary file ({left})")
    warn = [ln for ln in err if "--textfile" in ln]
    check(len(warn) == 1 and "sticky" in warn[0], f"a directory others write to without the sticky bit: warned once ({warn})")

    fdir = os.path.join(td, "planted_fifo")
    os.mkdir(fdir)
    os.chmod(fdir, 0o1777)  # /tmp-like: sticky, no warning
    os.mkfifo(os.path.join(fdir, ".schedhot.prom.tmp"))
    p = start("--listen", "", "--textfile", fdir, "-q")
    procs.append(p)
    wrote = wait_prom(fdir, p)
    dt, err = stop_timed(p)
    check(wrote and dt is not None and dt < 2,
          f"a FIFO planted at .schedhot.prom.tmp: schedhot.prom written ({wrote}), SIGTERM obeyed in "
          + (f"{dt:.2f} s" if dt is not None else "more than 10 s (killed)") + " (< 2 s)")
    check(not [ln for ln in err if "--textfile" in ln] and sorted(os.listdir(fdir)) == [".schedhot.prom.tmp"],
          f"sticky directory: no warning, the FIFO left alone ({err[:2]}, {sorted(os.listdir(fdir))})")

    # --textfile DIR that is another user's link, in a shared directory, to a directory only root
    # writes (an attacker's pass, 2026-12-05): serve wrote root's schedhot.prom there and
    # removed it at exit. Refused now, before anything is written.
    sdir = os.path.join(td, "shared")
    os.mkdir(sdir)
    os.chmod(sdir, 0o1777)
    rootdir = os.path.join(td, "rootonly")
    os.mkdir(rootdir, 0o700)
    with open(os.path.join(rootdir, "schedhot.prom"), "w") as fh:
        fh.write("root's\n")
    tlink = os.path.join(sdir, "tf")
    os.symlink(rootdir, tlink)
    os.lchown(tlink, 65534, 65534)
    p = start("--listen", "", "--textfile", tlink, "-q")
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    err = p.stderr.read().strip().splitlines()
    check(rc == 1 and len(err) == 1 and "symlink owned by uid 65534" in err[0]
          and open(os.path.join(rootdir, "schedhot.prom")).read() == "root's\n",
          f"--textfile through another user's link: refused, exit 1, one line, nothing written ({rc}, {err[:2]})")

    # schedhot.prom replaced by another user's file while serving, and serve's last write (at
    # SIGTERM) failing: that file is left at exit. A tmpfs of 3 inodes (the root, the
    # replacement, a filler) makes the last write fail with ENOSPC.
    rdir = os.path.join(td, "replaced")
    os.mkdir(rdir)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=3", "tmpfs", rdir]).returncode != 0:
        print("skip schedhot.prom replaced while serving: cannot mount a tmpfs here")
    else:
        mounts.append(rdir)
        p = subprocess.Popen([exe, "serve", "-i", "30", "--listen", "", "--textfile", rdir, "-q"], stderr=subprocess.PIPE, text=True)
        procs.append(p)
        wrote = wait_prom(rdir, p)
        other = os.path.join(rdir, "other")
        with open(other, "w") as fh:
            fh.write("not serve's\n")
        os.rename(other, os.path.join(rdir, "schedhot.prom"))
        open(os.path.join(rdir, "filler"), "w").close()
        dt, err = stop_timed(p)
        f = os.path.join(rdir, "schedhot.prom")
        kept = open(f).read() if os.path.exists(f) else None
        check(wrote and kept == "not serve's\n", f"schedhot.prom replaced by another file, serve's last write failing: "
                                                  f"that file left at exit ({kept!r}; {err[-1:]})")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    for m in mounts:
        subprocess.run(["umount", m])
    shutil.rmtree(td, ignore_errors=True)
print(f"{len(fails)} failure(s)")
sys.exit(1 if fails else 0)
