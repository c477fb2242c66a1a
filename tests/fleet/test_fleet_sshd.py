#!/usr/bin/python3
"""schedhot-fleet against a real sshd on 127.0.0.1 (label fleet; needs root, openssh-server).

One real sshd on a loopback port (sshd_hosts.py) plays the hosts, by alias:
  h1, h2    healthy (authorized_keys environment= puts the build's schedhot in PATH)
  nokey     host key not in its known_hosts        -> host key unknown
  refused   a key sshd does not accept              -> authentication refused
  dead      a port nobody listens on                -> unreachable
  missing   PATH without schedhot                   -> schedhot missing
  hang      the remote command sleeps past -t       -> timeout
  cut       its recorder is killed 1.0 s into the 2 s window -> partial recording, what it wrote
            collected, checked and reported as partial
  fails     record fails at once, a stale file where it records -> record failed, nothing collected
  nopriv    the real schedhot run as nobody (setpriv)  -> not privileged
  fewer     the real schedhot attaching only cpupri_set -> probe set differs
Then usage errors (an unknown @group too), a missing --remote-dir, a world-writable one without
the sticky bit, one of another user, a group-writable one, one under a world-writable parent
and one reached through symlinks (a link in another user's directory on the way) (refused; that
physical directory given itself is used), the private directory renamed and replaced (recording.shot a symlink to a root file)
right after the launch cd'd into it (the recorder writes in its own directory, the file is
untouched), and a run interrupted while recording (failure "interrupted", not "timeout"; a
re-run stops its recorder).
  viaport   its ssh_config entry names a port nobody listens on: --ssh-options '-p PORT' (as the
            help shows it) reaches sshd for the record and for collect's scp; a re-run of
            viaport alone into that directory lists h1 as stale (an earlier run's), not ranked.
The main run's --remote-dir is a shared sticky world-writable directory (/tmp-like) where
symlinks to a file of ours are planted at every name an earlier schedhot-fleet used: none is
followed or truncated, each host records in a private mktemp -d directory (0700).
  'a;rm -rf /'  hostile name                        -> bad host name (not contacted)
Then a re-run resumes (h1/h2 not re-recorded, failed hosts tried again) and --force re-records
with the report step: h1 and h2 ranked from their recordings, each failed host listed with why.
Usage: test_fleet_sshd.py BUILD_DIR (the directory with the schedhot binary)
"""
import json, os, shutil, signal, subprocess, sys, tempfile, time

from sshd_hosts import Checks, Sshd, paths_or_skip


def sticky_dir_and_file(t, dname, fname, text, mode):
    """(t/dname: a sticky world-writable directory like /tmp, t/fname: a file holding text
    with mode): a shared remote dir and the file a planted link would aim at."""
    d, f = os.path.join(t, dname), os.path.join(t, fname)
    os.mkdir(d)
    os.chmod(d, 0o1777)
    with open(f, "w") as fh:
        fh.write(text)
    os.chmod(f, mode)
    return d, f

build, src, fleet = paths_or_skip(sys.argv)
ck = Checks()
check = ck.check


sshd = None
tmp = tempfile.mkdtemp(prefix="schedhot-fleet-bin-")
try:
    bindir, cutdir = os.path.join(tmp, "bin"), os.path.join(tmp, "cut")
    os.mkdir(bindir)
    os.mkdir(cutdir)
    os.symlink(os.path.join(build, "schedhot"), os.path.join(bindir, "schedhot"))
    # The "cut" host's schedhot: its recorder is killed (SIGKILL) 1.0 s into the window.
    with open(os.path.join(cutdir, "schedhot"), "w") as f:
        f.write("""#!/bin/sh
prev=; at=
for a in "$@"; do [ "$prev" = --start-at ] && at=$a; prev=$a; done
if [ "$1" = record ] && [ -n "$at" ]; then
  %s "$@" & p=$!
  # Killed 1.0 s after the window's start (fractional: a whole-second sleep landed
  # anywhere up to the window's end at 2 s, and once after the recorder had closed).
  d=$(awk -v a="$at" -v n="$(date +%%s.%%N)" 'BEGIN { d = a + 1.0 - n; printf "%%.3f", (d > 0 ? d : 0) }')
  sleep "$d"
  kill -9 $p
  wait $p
  exit $?
fi
exec %s "$@"
""" % (os.path.join(build, "schedhot"), os.path.join(build, "schedhot")))
    os.chmod(os.path.join(cutdir, "schedhot"), 0o755)
    # The "fails" host's schedhot: record --start-at fails at once (exit 7).
    failsdir = os.path.join(tmp, "fails")
    os.mkdir(failsdir)
    with open(os.path.join(failsdir, "schedhot"), "w") as f:
        f.write("""#!/bin/sh
case " $* " in *" record "*"--start-at "*) echo 'schedhot: boom' >&2; exit 7 ;; esac
exec %s "$@"
""" % os.path.join(build, "schedhot"))
    os.chmod(os.path.join(failsdir, "schedhot"), 0o755)
    real = os.path.join(build, "schedhot")
    # "nopriv": the real schedhot run as nobody (setpriv), as on a host where it has no root.
    # "fewer": the real schedhot attaching only cpupri_set, as on a kernel that lacks the rest.
    wrappers = {"nopriv": 'exec setpriv --reuid=65534 --regid=65534 --clear-groups %s "$@"' % real,
                "fewer": 'case "$1" in probes|record) exec %s "$@" --probes cpupri_set ;; esac\nexec %s "$@"' % (real, real)}
    for name, body in wrappers.items():
        os.mkdir(os.path.join(tmp, name))
        with open(os.path.join(tmp, name, "schedhot"), "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(os.path.join(tmp, name, "schedhot"), 0o755)
    sshd = Sshd({"user_key": 'environment="PATH=%s:/usr/bin:/bin"' % bindir,
                 "missing_key": 'environment="PATH=/usr/bin:/bin"',
                 "cut_key": 'environment="PATH=%s:/usr/bin:/bin"' % cutdir,
                 "fails_key": 'environment="PATH=%s:/usr/bin:/bin"' % failsdir,
                 "nopriv_key": 'environment="PATH=%s:/usr/bin:/bin"' % os.path.join(tmp, "nopriv"),
                 "fewer_key": 'environment="PATH=%s:/usr/bin:/bin"' % os.path.join(tmp, "fewer"),
                 "hang_key": 'command="sleep 60"'})
    t = sshd.t
    for h in ("h1", "h2"):
        sshd.host(h, "user_key")
    sshd.host("nokey", "user_key", known="empty_known_hosts")
    sshd.host("refused", "other_key")
    sshd.host("dead", "user_key", port=sshd.dead)
    sshd.host("missing", "missing_key")
    sshd.host("hang", "hang_key")
    sshd.host("cut", "cut_key")
    sshd.host("fails", "fails_key")
    sshd.host("nopriv", "nopriv_key")
    sshd.host("fewer", "fewer_key")
    sshd.host("viaport", "user_key", port=sshd.dead)
    ssh_config = sshd.ssh_config()
    out = os.path.join(t, "fleet")
    # The remote dir: shared, sticky and world-writable like /tmp. Symlinks to a file of ours
    # wait at the names schedhot-fleet used to create there (FILE, FILE.log, .pid, .rc).
    shared, victim = sticky_dir_and_file(t, "shared", "victim", "precious\n", 0o644)
    planted = []
    for h in ("h1", "h2", "cut"):
        for suffix in ("", ".log", ".pid", ".rc", ".rc.tmp"):
            planted.append(os.path.join(shared, "schedhot-fleet-%s.shot%s" % (h, suffix)))
            os.symlink(victim, planted[-1])
    # An earlier run's file where "fails" recorded: it must not pass for this run's recording.
    shutil.copy(os.path.join(src, "tests", "data", "vm-7.3.shot"), os.path.join(shared, "schedhot-fleet-fails.shot"))

    def run(*extra, report=False):
        cmd = [fleet, "run", "-o", out, "-F", ssh_config, "-w", "h[1-2],nokey,refused,dead,missing,hang,cut,fails,nopriv,fewer",
               "-w", "a;rm -rf /", "-d", "2", "-i", "200ms", "--start-delay", "2", "-t", "8", "--connect-timeout", "3",
               "--remote-dir", shared, "--local-schedhot", os.path.join(build, "schedhot")] + ([] if report else ["--no-report"]) + list(extra)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=80)
        print(r.stderr)
        return r

    r = run()
    check(r.returncode == 1, "exit 1 when a host failed (got %d)" % r.returncode)
    st = lambda h: json.load(open(os.path.join(out, h, "state.json")))
    expect = {"nokey": "host key unknown", "refused": "authentication refused", "dead": "unreachable",
              "missing": "schedhot missing", "hang": "timeout", "nopriv": "not privileged",
              "fewer": "probe set differs"}
    for h, name in expect.items():
        f = st(h).get("failure") or {}
        check(f.get("name") == name, "%s: %s (got %s)" % (h, name, f))
    cut = st("cut")
    check((cut.get("failure") or {}).get("name") == "partial recording" and "record failed" in cut["failure"]["detail"]
          and "recovered" in cut["failure"]["detail"], "cut: partial recording, record failed, recovered (got %s)" % cut.get("failure"))
    check((cut["steps"].get("check", {}).get("samples") or 0) >= 2, "cut: >= 2 samples recovered (got %s)"
          % cut["steps"].get("check", {}).get("samples"))
    check("cut: partial recording (check)" in r.stderr, "cut: named in the summary")
    fl = st("fails").get("failure") or {}
    check(fl.get("name") == "record failed" and "boom" in fl.get("detail", ""), "fails: record failed, its message (got %s)" % fl)
    check(not os.path.exists(os.path.join(out, "fails", "recording.shot")),
          "fails: an earlier file at the old name in the remote dir is not collected")
    # Nothing planted was followed: the file the links point at is intact, the links are there.
    check(open(victim).read() == "precious\n", "shared remote dir: no planted symlink followed or truncated (victim: %r)"
          % open(victim).read()[:40])
    check(all(os.path.islink(l) for l in planted), "shared remote dir: the planted links are left alone")
    for h in ("h1", "h2"):
        rf = st(h)["steps"].get("record", {}).get("remote_file", "")
        d = os.path.dirname(rf)
        ok = os.path.dirname(d) == shared and os.path.basename(d).startswith("schedhot-fleet.") and os.path.isdir(d) \
            and not os.path.islink(d) and (os.lstat(d).st_mode & 0o7777) == 0o700 and os.lstat(d).st_uid == os.geteuid()
        check(ok and sorted(os.listdir(d)) == ["log", "pid", "rc", "recording.shot"],
              "%s: recorded in a private directory of its own, 0700 (%s: %s)" % (h, rf, sorted(os.listdir(d)) if ok else "-"))
    check("a;rm -rf /: bad host name" in r.stderr, "hostile name is a failed host")
    check(not os.path.exists(os.path.join(out, "a;rm -rf ")), "no directory for the hostile name")
    starts = set()
    for h in ("h1", "h2"):
        s = st(h)
        check(s.get("failure") is None and s["steps"].get("check", {}).get("ok"), "%s: complete, checked recording" % h)
        check((s["steps"].get("check", {}).get("samples") or 0) >= 10, "%s: >= 10 samples (2 s at 200 ms)" % h)
        starts.add(s["steps"].get("record", {}).get("start_at"))
        p = subprocess.run([os.path.join(build, "schedhot"), "info", "--json", os.path.join(out, h, "recording.shot")],
                           capture_output=True, text=True)
        info = json.loads(p.stdout) if p.returncode == 0 else {}
        check(info.get("integrity", {}).get("complete"), "%s: info says complete" % h)
        check((info.get("start_wall_ns") or 0) >= (s["steps"].get("record", {}).get("start_at") or 1e30) * 10**9,
              "%s: started at --start-at" % h)
    check(len(starts) == 1, "h1 and h2 share one --start-at instant")
    fleetj = json.load(open(os.path.join(out, "fleet.json")))
    check(sorted(fleetj["complete"]) == ["h1", "h2"], "fleet.json lists h1, h2 complete")
    # Resume: h1/h2 keep their recordings; failed hosts are tried again.
    m1 = os.path.getmtime(os.path.join(out, "h1", "recording.shot"))
    r = run()
    check(os.path.getmtime(os.path.join(out, "h1", "recording.shot")) == m1, "resume: h1 not re-recorded")
    check(st("dead")["failure"]["name"] == "unreachable", "resume: dead tried again, still unreachable")
    r = run("--force", "--json", report=True)
    check(os.path.getmtime(os.path.join(out, "h1", "recording.shot")) != m1, "--force: h1 re-recorded")
    # The report step of the run: h1 and h2 ranked from their recordings, every failed host listed with why.
    try:
        rep = json.loads(r.stdout)
    except ValueError:
        rep = {}
    rows = {h["host"]: h for h in rep.get("hosts", [])}
    for h in ("h1", "h2"):
        check(rows.get(h, {}).get("status") == "reported" and isinstance(rows.get(h, {}).get("rank"), int),
              "report: %s ranked (got %s)" % (h, rows.get(h, {}).get("status")))
        check((rows.get(h, {}).get("samples") or 0) >= 10, "report: %s has its >= 10 samples" % h)
    c = rows.get("cut", {})
    check(c.get("status") == "partial" and (c.get("samples") or 0) >= 2 and
          any("partial recording" in f for f in c.get("flags", [])),
          "report: cut listed as partial with its samples and the fleet failure (got %s)" % {k: c.get(k) for k in ("status", "samples", "flags")})
    for h, name in expect.items():
        check(rows.get(h, {}).get("status") == "failed" and name in (rows.get(h, {}).get("why") or ""),
              "report: %s failed with why '%s' (got %s)" % (h, name, rows.get(h, {}).get("why")))
    # The report step alone is read-only: fleet.json stays as the run wrote it (a report that
    # rewrote it made the directory's hosts stale), and a named host no run recorded is said.
    fj = os.path.join(out, "fleet.json")
    with open(fj) as f:
        before = f.read()
    r3 = subprocess.run([fleet, "report", "-o", out, "-F", ssh_config, "-w", "h1,ghost",
                         "--local-schedhot", os.path.join(build, "schedhot"), "--json"],
                        capture_output=True, text=True, timeout=120)
    with open(fj) as f:
        check(f.read() == before, "report step: fleet.json left as the run wrote it")
    check(r3.returncode == 1 and "ghost: not in" in r3.stderr and "h1:" not in r3.stderr,
          "report step: the unknown host named, exit 1 (got %d: %s)" % (r3.returncode, r3.stderr.strip()[-300:]))
    try:
        rows3 = {h["host"]: h for h in json.loads(r3.stdout).get("hosts", [])}
    except ValueError:
        rows3 = {}
    check(rows3.get("h1", {}).get("status") == "reported" and rows3.get("cut", {}).get("status") == "partial",
          "report step: the run's hosts still reported (got %s)" % {h: v.get("status") for h, v in rows3.items()})
    # Without -w the report step ranks the directory's hosts (it contacts none: a fresh user's
    # `schedhot-fleet report -o DIR` said "no hosts: give -w NODESET").
    r4 = subprocess.run([fleet, "report", "-o", out, "--local-schedhot", os.path.join(build, "schedhot"), "--json"],
                        capture_output=True, text=True, timeout=120)
    try:
        rows4 = {h["host"]: h for h in json.loads(r4.stdout).get("hosts", [])}
    except ValueError:
        rows4 = {}
    ref = subprocess.run([os.path.join(build, "schedhot"), "report", "--fleet", out, "--json"],
                         capture_output=True, text=True, timeout=120)
    check(r4.returncode == ref.returncode and r4.stdout == ref.stdout and rows4.get("h1", {}).get("status") == "reported",
          "report step without -w: the directory's hosts ranked as `schedhot report --fleet DIR` ranks them, its exit "
          "status (got %d, want %d: %s; %s)" % (r4.returncode, ref.returncode, r4.stderr.strip()[-200:],
                                                 {h: v.get("status") for h, v in rows4.items()}))
    # Usage errors before any host is contacted.
    for bad in (["-d", "0"], ["-d", "5x"], ["--start-at", "nan"], ["-w", "fleet.json"]):
        hosts = [] if bad[0] == "-w" else ["-w", "h1"]  # fleet.json: a bad host name, nobody contacted
        r2 = subprocess.run([fleet, "run", "-o", os.path.join(t, "usage"), "-F", ssh_config] + hosts + bad,
                            capture_output=True, text=True, timeout=60)
        want = 1 if bad[0] == "-w" else 2
        check(r2.returncode == want and "Traceback" not in r2.stderr, "%s: exit %d, one line (got %d: %s)"
              % (" ".join(bad), want, r2.returncode, r2.stderr.strip()[-200:]))
    # An unknown @group names no host: an error, not "0 host(s)" and exit 0.
    r2 = subprocess.run([fleet, "preflight", "-w", "@nosuchgroup", "-o", os.path.join(t, "nogroup"), "-F", ssh_config],
                        capture_output=True, text=True, timeout=60)
    check(r2.returncode == 2 and "@nosuchgroup" in r2.stderr and "names no host" in r2.stderr
          and len(r2.stderr.strip().splitlines()) == 1, "preflight -w @nosuchgroup: exit 2, one line (got %d: %s)"
          % (r2.returncode, r2.stderr.strip()[-200:]))
    base = [fleet, "run", "-F", ssh_config, "-w", "h1", "-i", "200ms", "--start-delay", "3", "-t", "8",
            "--connect-timeout", "3", "--local-schedhot", os.path.join(build, "schedhot"), "--no-report"]
    # A --remote-dir that does not exist: record failed at once with the shell's reason.
    t0 = time.time()
    r2 = subprocess.run(base + ["-o", os.path.join(t, "nodir"), "-d", "2", "--remote-dir", "/nonexistent-dir"],
                        capture_output=True, text=True, timeout=60)
    f2 = (json.load(open(os.path.join(t, "nodir", "h1", "state.json"))).get("failure") or {})
    check(f2.get("name") == "record failed" and "No such file" in f2.get("detail", "") and time.time() - t0 < 20,
          "missing --remote-dir: record failed at once (got %s in %.0f s)" % (f2, time.time() - t0))
    # A remote dir others could plant names in, or another user's: refused, one line per host.
    opendir, theirs = os.path.join(t, "open"), os.path.join(t, "theirs")
    os.mkdir(opendir)
    os.chmod(opendir, 0o777)
    os.mkdir(theirs)
    os.chown(theirs, 65534, 65534)
    # Group-writable (the group of another user), and a directory under a world-writable
    # parent without the sticky bit (it could be renamed away and replaced): refused too.
    grouped, wwparent = os.path.join(t, "grouped"), os.path.join(t, "wwparent")
    os.mkdir(grouped)
    os.chown(grouped, 0, 65534)
    os.chmod(grouped, 0o770)
    os.mkdir(wwparent)
    os.chmod(wwparent, 0o777)
    under = os.path.join(wwparent, "rd")
    os.mkdir(under)
    for rdir, why in ((opendir, "world-writable without the sticky bit"), (theirs, "owned by uid 65534"),
                      (grouped, "group-writable without the sticky bit"),
                      (under, "ancestor %s: world-writable without the sticky bit" % wwparent)):
        o2 = os.path.join(t, "refused-" + os.path.basename(rdir))
        r2 = subprocess.run(base + ["-o", o2, "-d", "2", "--remote-dir", rdir], capture_output=True, text=True, timeout=60)
        f2 = (json.load(open(os.path.join(o2, "h1", "state.json"))).get("failure") or {})
        check(r2.returncode == 1 and f2.get("name") == "remote dir refused" and why in f2.get("detail", "")
              and "h1: remote dir refused (record): --remote-dir %s: %s" % (rdir, why) in r2.stderr and not os.listdir(rdir),
              "--remote-dir %s: refused, nothing created in it (got %s)" % (os.path.basename(rdir), f2))
    # The local fleet directory, run as root: one another user owns, or one reached through a
    # link, is refused before anything is written (they could plant fleet.json or
    # <host>/state.json.tmp as a link for root to write through).
    os.symlink(t, os.path.join(t, "viaLink"))
    for o2, why in ((os.path.join(theirs, "fd"), "belongs to another user (uid 65534)"),
                    (os.path.join(t, "viaLink", "fd"), "is a symbolic link")):
        r2 = subprocess.run(base + ["-o", o2, "-d", "2"], capture_output=True, text=True, timeout=60)
        check(r2.returncode == 2 and why in r2.stderr and len(r2.stderr.strip().splitlines()) == 1
              and not os.path.exists(os.path.join(theirs, "fd")) and not os.path.exists(os.path.join(t, "fd")),
              "local -o %s: refused in one line, nothing made (%d: %s)" % (o2, r2.returncode, r2.stderr.strip()[-200:]))
    # A remote dir reached through a symlink: the user's link home/rd -> atkshared/atkd/l2, a
    # link in a directory of another user's (uid 65534, who could re-point it later) to a root
    # directory. Both walks (as given, and physical) pass such a chain: any symlink in the path
    # is refused with one line naming the physical path; that directory given itself is used.
    rootrd, home, atks = os.path.join(t, "rootrd"), os.path.join(t, "userhome"), os.path.join(t, "atkshared")
    for d in (rootrd, home, atks):
        os.mkdir(d)
    os.chmod(atks, 0o1777)
    atkd = os.path.join(atks, "atkd")
    os.mkdir(atkd)
    os.symlink(rootrd, os.path.join(atkd, "l2"))
    os.lchown(os.path.join(atkd, "l2"), 65534, 65534)
    os.chown(atkd, 65534, 65534)
    linked = os.path.join(home, "rd")
    os.symlink(os.path.join(atkd, "l2"), linked)
    ol = os.path.join(t, "refused-linked")
    r2 = subprocess.run(base + ["-o", ol, "-d", "2", "--remote-dir", linked], capture_output=True, text=True, timeout=60)
    f2 = (json.load(open(os.path.join(ol, "h1", "state.json"))).get("failure") or {})
    line = "--remote-dir %s: a symlink in its path (physical path %s): give %s itself" % (linked, rootrd, rootrd)
    check(r2.returncode == 1 and f2.get("name") == "remote dir refused" and f2.get("detail") == line
          and "h1: remote dir refused (record): " + line in r2.stderr and not os.listdir(rootrd),
          "--remote-dir through a chain of symlinks: refused, nothing created (got %s)" % f2)
    od = os.path.join(t, "direct-rootrd")
    r2 = subprocess.run(base + ["-o", od, "-d", "2", "--remote-dir", rootrd], capture_output=True, text=True, timeout=80)
    rf = (json.load(open(os.path.join(od, "h1", "state.json")))["steps"].get("record") or {}).get("remote_file", "")
    check(r2.returncode == 0 and os.path.dirname(os.path.dirname(rf)) == rootrd and os.path.isfile(rf)
          and os.path.isfile(os.path.join(od, "h1", "recording.shot")),
          "--remote-dir given as that physical directory: recorded and collected there (got %d, %s: %s)"
          % (r2.returncode, rf, r2.stderr.strip()[-200:]))
    # The swap race: a racer (root here, standing in for anyone who may rename in the remote
    # dir) renames the private directory away as soon as its log appears (the launch shell is
    # in it by then) and puts a directory of its own at that path, with recording.shot a
    # symlink to a root 0600 file. The recorder writes in the directory it was started in
    # (cd once, relative names, no --force), so the victim stays untouched.
    racedir, secret = sticky_dir_and_file(t, "race", "secret", "root secret\n", 0o600)
    race = {}

    def racer():
        end = time.time() + 30
        while time.time() < end and not race.get("stop"):
            for n in os.listdir(racedir):
                d = os.path.join(racedir, n)
                if n.startswith("schedhot-fleet.") and os.path.exists(os.path.join(d, "log")):
                    moved = os.path.join(racedir, "moved-" + n)
                    os.rename(d, moved)
                    os.mkdir(d, 0o700)
                    os.symlink(secret, os.path.join(d, "recording.shot"))
                    race["moved"] = moved
                    for _ in range(200):  # the recorder as it runs (exec'd): its command line and directory
                        try:
                            pid = int(open(os.path.join(moved, "pid")).read())
                            race["cmdline"] = open("/proc/%d/cmdline" % pid).read().split("\0")
                            race["cwd"] = os.readlink("/proc/%d/cwd" % pid)
                            if "record" in race["cmdline"]:
                                break
                        except (OSError, ValueError):
                            pass
                        time.sleep(0.02)
                    return
            time.sleep(0.002)
    import threading
    th = threading.Thread(target=racer)
    th.start()
    ro = os.path.join(t, "raced")
    r2 = subprocess.run(base + ["-o", ro, "-d", "2", "--remote-dir", racedir], capture_output=True, text=True, timeout=80)
    race["stop"] = True
    th.join()
    moved = race.get("moved", "")
    check(bool(moved), "race: the racer swapped the private directory")
    check(open(secret, "rb").read() == b"root secret\n" and not os.path.islink(secret)
          and (os.stat(secret).st_mode & 0o777) == 0o600,
          "race: the symlinked victim is untouched (%r)" % open(secret, "rb").read()[:40])
    cl = race.get("cmdline", [])
    check("--force" not in cl and "recording.shot" in cl and cl[cl.index("recording.shot") - 1] == "-o"
          and race.get("cwd") == moved, "race: the recorder ran in its own directory with -o recording.shot, no --force "
          "(cmdline %s, cwd %s)" % (cl, race.get("cwd")))
    info = subprocess.run([os.path.join(build, "schedhot"), "info", "--json", os.path.join(moved, "recording.shot")],
                          capture_output=True, text=True) if moved else None
    check(info is not None and info.returncode == 0 and json.loads(info.stdout).get("integrity", {}).get("complete")
          and sorted(os.listdir(moved)) == ["log", "pid", "rc", "recording.shot"],
          "race: the recording, log, pid and rc went to the renamed private directory (%s)"
          % (sorted(os.listdir(moved)) if moved else "-"))
    check(r2.returncode == 1, "race: the run fails for h1 (got %d: %s)" % (r2.returncode, r2.stderr.strip()[-200:]))
    # sshd on a port the ssh config does not name: --ssh-options '-p PORT' as the help shows it,
    # for the record (ssh) and for collect (scp, where -p alone means "preserve").
    pdir = os.path.join(t, "port")
    r2 = subprocess.run(base + ["-o", pdir, "-d", "2", "--remote-dir", shared, "-w", "viaport",
                                "--ssh-options", "-p %d" % sshd.port], capture_output=True, text=True, timeout=80)
    print(r2.stderr)
    fj = json.load(open(os.path.join(pdir, "fleet.json"))) if os.path.exists(os.path.join(pdir, "fleet.json")) else {}
    check(r2.returncode == 0 and sorted(fj.get("complete", [])) == ["h1", "viaport"],
          "--ssh-options '-p PORT': record and collect reach the port (got %d, complete %s)" % (r2.returncode, fj.get("complete")))
    # Re-run into that directory with h1 left out: h1 is an earlier run's host, listed apart as
    # stale with when it was recorded, never ranked; viaport (complete, not re-recorded) is ranked.
    h1_at = json.load(open(os.path.join(pdir, "h1", "state.json")))["steps"].get("record", {}).get("start_at")
    r2 = subprocess.run([fleet, "run", "-F", ssh_config, "-w", "viaport", "--ssh-options", "-p %d" % sshd.port, "-o", pdir,
                         "--connect-timeout", "3", "--local-schedhot", os.path.join(build, "schedhot"), "--json"],
                        capture_output=True, text=True, timeout=80)
    try:
        rows = {h["host"]: h for h in json.loads(r2.stdout).get("hosts", [])}
    except ValueError:
        rows = {}
    h1r, vp = rows.get("h1", {}), rows.get("viaport", {})
    check(r2.returncode == 0 and vp.get("rank") == 1 and vp.get("status") == "reported",
          "re-run without h1: viaport ranked first (got %d, %s)" % (r2.returncode, {k: vp.get(k) for k in ("rank", "status")}))
    check(h1r.get("status") == "stale" and h1r.get("rank") is None and h1r.get("recorded_at") == h1_at
          and "earlier run" in (h1r.get("why") or ""),
          "re-run without h1: h1 listed as stale, recorded at its run's instant, not ranked (got %s)"
          % {k: h1r.get(k) for k in ("status", "rank", "recorded_at", "why")})
    txt = subprocess.run([os.path.join(build, "schedhot"), "report", "--fleet", pdir], capture_output=True, text=True).stdout
    check("Stale (" in txt and "\n  h1: recorded " in txt, "text report: h1 under Stale with its time")
    # Interrupted while recording: exit 130, the pid kept; a re-run stops that recorder and records again.
    intr = os.path.join(t, "intr")
    p = subprocess.Popen(base + ["-o", intr, "-d", "60", "--remote-dir", shared], stderr=subprocess.PIPE, text=True)
    time.sleep(6)
    p.send_signal(signal.SIGINT)
    e2 = p.communicate(timeout=30)[1]
    check(p.returncode == 130 and "interrupted" in e2, "SIGINT: exit 130, says so (got %d)" % p.returncode)
    sti = json.load(open(os.path.join(intr, "h1", "state.json")))
    check(isinstance(sti["steps"].get("record", {}).get("pid"), int), "SIGINT: the recorder's pid is in state.json")
    check((sti.get("failure") or {}).get("name") == "interrupted" and "h1: interrupted (record)" in e2,
          "SIGINT: the host's failure is 'interrupted', not 'timeout' (got %s)" % sti.get("failure"))
    old_dir = os.path.dirname(sti["steps"].get("record", {}).get("remote_file", "/nonexistent/x"))
    r2 = subprocess.run(base + ["-o", intr, "-d", "2", "--remote-dir", shared], capture_output=True, text=True, timeout=80)
    left = [l for l in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
            if "record" in l and "-d 60" in l and old_dir in l]
    check(r2.returncode == 0 and not left, "re-run: complete, the interrupted run's recorder stopped (left: %s)" % left)
    check(not os.path.exists(old_dir), "re-run: the interrupted run's private directory removed (%s)" % old_dir)
finally:
    if sshd:
        sshd.close()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(ck.exit_status())
