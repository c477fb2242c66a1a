#!/usr/bin/python3
"""schedhot-fleet against a real sshd on 127.0.0.1 (label fleet; needs root, openssh-server).

One `sshd -D -f <generated config>` on a free loopback port with a generated host key; an
ssh_config in a temp dir (passed with -F, so the user's ~/.ssh is never read) maps aliases:
  h1, h2    healthy (authorized_keys environment= puts the build's schedhot in PATH)
  nokey     host key not in its known_hosts        -> host key unknown
  refused   a key sshd does not accept              -> authentication refused
  dead      a port nobody listens on                -> unreachable
  missing   PATH without schedhot                   -> schedhot missing
  hang      the remote command sleeps past -t       -> timeout
  'a;rm -rf /'  hostile name                        -> bad host name (not contacted)
Then a re-run resumes (h1/h2 not re-recorded, failed hosts tried again) and --force re-records
with the report step: h1 and h2 ranked from their recordings, each failed host listed with why.
Usage: test_fleet_sshd.py BUILD_DIR (the directory with the schedhot binary)
"""
import json, os, shutil, socket, subprocess, sys, tempfile, time

build = os.path.abspath(sys.argv[1])
src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
fleet = os.path.join(src, "src", "fleet", "schedhot-fleet")
if os.geteuid() != 0 or not os.path.exists("/usr/sbin/sshd"):
    print("SKIP: needs root and /usr/sbin/sshd")
    sys.exit(77)

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


t = tempfile.mkdtemp(prefix="schedhot-fleet-")
os.chmod(t, 0o700)
sshd = None
try:
    def kg(name):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(t, name)], check=True)
    for k in ("host_key", "user_key", "missing_key", "hang_key", "other_key"):
        kg(k)
    bindir = os.path.join(t, "bin")
    os.mkdir(bindir)
    os.symlink(os.path.join(build, "schedhot"), os.path.join(bindir, "schedhot"))
    pub = lambda k: open(os.path.join(t, k + ".pub")).read().strip()
    with open(os.path.join(t, "authorized_keys"), "w") as f:
        f.write('environment="PATH=%s:/usr/bin:/bin" %s\n' % (bindir, pub("user_key")))
        f.write('environment="PATH=/usr/bin:/bin" %s\n' % pub("missing_key"))
        f.write('command="sleep 60" %s\n' % pub("hang_key"))
    port, dead = free_port(), free_port()
    with open(os.path.join(t, "sshd_config"), "w") as f:
        f.write("\n".join([
            "ListenAddress 127.0.0.1", "Port %d" % port, "HostKey %s/host_key" % t,
            "PermitRootLogin prohibit-password", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "AuthorizedKeysFile %s/authorized_keys" % t,
            "StrictModes no", "PermitUserEnvironment PATH", "UsePAM no",
            "PidFile %s/sshd.pid" % t, "Subsystem sftp internal-sftp", "LogLevel ERROR", ""]))
    os.makedirs("/run/sshd", exist_ok=True)
    sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", os.path.join(t, "sshd_config")],
                            stderr=open(os.path.join(t, "sshd.log"), "w"))
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    with open(os.path.join(t, "known_hosts"), "w") as f:
        f.write("[127.0.0.1]:%d %s\n" % (port, pub("host_key")))
    open(os.path.join(t, "empty_known_hosts"), "w").close()
    common = ["HostName 127.0.0.1", "User root", "IdentitiesOnly yes", "BatchMode yes",
              "StrictHostKeyChecking yes", "HostKeyAlias [127.0.0.1]:%d" % port]

    def host(alias, key="user_key", known="known_hosts", p=port):
        return ["Host " + alias, "  Port %d" % p, "  IdentityFile %s/%s" % (t, key),
                "  UserKnownHostsFile %s/%s" % (t, known)] + ["  " + c for c in common]
    cfg = (host("h1") + host("h2") + host("nokey", known="empty_known_hosts") + host("refused", key="other_key")
           + host("dead", p=dead) + host("missing", key="missing_key") + host("hang", key="hang_key"))
    with open(os.path.join(t, "ssh_config"), "w") as f:
        f.write("\n".join(cfg) + "\n")
    out = os.path.join(t, "fleet")

    def run(*extra, report=False):
        cmd = [fleet, "run", "-o", out, "-F", os.path.join(t, "ssh_config"), "-w", "h[1-2],nokey,refused,dead,missing,hang",
               "-w", "a;rm -rf /", "-d", "2", "-i", "200ms", "--start-delay", "2", "-t", "8", "--connect-timeout", "3",
               "--remote-dir", t, "--local-schedhot", os.path.join(build, "schedhot")] + ([] if report else ["--no-report"]) + list(extra)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=80)
        print(r.stderr)
        return r

    r = run()
    check(r.returncode == 1, "exit 1 when a host failed (got %d)" % r.returncode)
    st = lambda h: json.load(open(os.path.join(out, h, "state.json")))
    expect = {"nokey": "host key unknown", "refused": "authentication refused", "dead": "unreachable",
              "missing": "schedhot missing", "hang": "timeout"}
    for h, name in expect.items():
        f = st(h).get("failure") or {}
        check(f.get("name") == name, "%s: %s (got %s)" % (h, name, f))
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
    for h, name in expect.items():
        check(rows.get(h, {}).get("status") == "failed" and name in (rows.get(h, {}).get("why") or ""),
              "report: %s failed with why '%s' (got %s)" % (h, name, rows.get(h, {}).get("why")))
finally:
    if sshd:
        sshd.terminate()
        sshd.wait()
    shutil.rmtree(t, ignore_errors=True)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
