#!/usr/bin/python3
"""schedhot-fleet over 200 hosts of one real sshd on 127.0.0.1 (label fleet; root, openssh-server).

h001..h200 are aliases of one sshd (sshd_hosts.py) that accepts 256 connections at once, as
200 machines would. ClusterShell's default fan-out (64) is below the host count, so this is the
case where the recorders must run detached: every host has to start on the one --start-at
instant, not a window later per fan-out wave. Each host records 2 s at 500 ms; the run
must finish, every host's recording must be complete and start at the instant, and the
report must rank all 200.
Usage: test_fleet_200.py BUILD_DIR (the directory with the schedhot binary)
"""
import json, os, shutil, subprocess, sys, tempfile, time

from sshd_hosts import Checks, Sshd, paths_or_skip

N = 200
build, src, fleet = paths_or_skip(sys.argv)
ck = Checks()
check = ck.check


sshd = None
tmp = tempfile.mkdtemp(prefix="schedhot-fleet200-")
try:
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    os.symlink(os.path.join(build, "schedhot"), os.path.join(bindir, "schedhot"))
    sshd = Sshd({"user_key": 'environment="PATH=%s:/usr/bin:/bin"' % bindir}, max_startups=256)
    names = ["h%03d" % i for i in range(1, N + 1)]
    for h in names:
        sshd.host(h, "user_key")
    out = os.path.join(tmp, "fleet")
    # The start instant leaves time for 200 recorders to load and attach their BPF programs
    # on this 2-core machine (about 0.45 s of CPU each) before the window opens.
    t0 = time.time()
    r = subprocess.run([fleet, "run", "-o", out, "-F", sshd.ssh_config(), "-w", "h[001-%03d]" % N, "-d", "2",
                        "-i", "500ms", "--start-delay", "120", "-t", "60", "--connect-timeout", "20",
                        "--remote-dir", tmp, "--local-schedhot", os.path.join(build, "schedhot"), "--json"],
                       capture_output=True, text=True, timeout=900)
    took = time.time() - t0
    print(r.stderr[-3000:])
    print("run of %d hosts: %.0f s" % (N, took))
    check(r.returncode == 0, "exit 0: no host failed (got %d)" % r.returncode)
    fj = json.load(open(os.path.join(out, "fleet.json")))
    check(len(fj["complete"]) == N, "fleet.json: %d of %d complete" % (len(fj["complete"]), N))
    starts, late = set(), []
    for h in names:
        st = json.load(open(os.path.join(out, h, "state.json")))
        at = st["steps"].get("record", {}).get("start_at")
        starts.add(at)
        p = subprocess.run([os.path.join(build, "schedhot"), "info", "--json", os.path.join(out, h, "recording.shot")],
                           capture_output=True, text=True)
        info = json.loads(p.stdout) if p.returncode == 0 else {}
        w = (info.get("start_wall_ns") or 0) / 1e9
        if not (at and at <= w < at + 1.0):
            late.append("%s %+.3f s" % (h, w - (at or 0)))
    check(len(starts) == 1, "one --start-at instant for every host (got %d)" % len(starts))
    check(not late, "every recording starts within 1 s of the instant, past the fan-out of 64 (late: %s)" % late[:5])
    try:
        rep = json.loads(r.stdout)
    except ValueError:
        rep = {}
    rows = rep.get("hosts", [])
    ranked = sorted(h["rank"] for h in rows if h.get("status") == "reported" and isinstance(h.get("rank"), int))
    check(len(rows) == N and ranked == list(range(1, N + 1)),
          "report: %d rows, ranks 1..%d (got %d rows, %d ranked)" % (N, N, len(rows), len(ranked)))
finally:
    if sshd:
        sshd.close()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(ck.exit_status())
