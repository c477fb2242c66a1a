"""A real sshd on 127.0.0.1 standing in for a fleet's hosts (tests/fleet/test_fleet_*.py).

One `sshd -D -f <generated config>` on a free loopback port with a generated host key; an
ssh_config in a temp dir (passed to schedhot-fleet with -F, so the user's ~/.ssh is never read)
maps host aliases onto it. Each alias picks a client key; authorized_keys gives each key its
environment (a PATH with or without schedhot) or a forced command, so one sshd plays hosts
that are healthy, lack schedhot, hang, or run a wrapper. Needs root and /usr/sbin/sshd.
"""
import os
import shutil
import sys
import socket
import subprocess
import tempfile
import time


def paths_or_skip(argv):
    """(build dir, source dir, schedhot-fleet) for a test called as `test.py BUILD_DIR`;
    exits 77 (CTest's skip) without root or /usr/sbin/sshd."""
    if os.geteuid() != 0 or not os.path.exists("/usr/sbin/sshd"):
        print("SKIP: needs root and /usr/sbin/sshd")
        sys.exit(77)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.abspath(argv[1]), src, os.path.join(src, "src", "fleet", "schedhot-fleet")


class Checks:
    """ok/FAIL lines; the exit status is 1 when any check failed."""

    def __init__(self):
        self.failures = []

    def check(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            self.failures.append(what)

    def exit_status(self):
        print("%d failure(s)" % len(self.failures))
        return 1 if self.failures else 0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Sshd:
    """sshd with keys: {name: authorized_keys options}; aliases added with host()."""

    def __init__(self, keys, max_startups=10):
        self.t = tempfile.mkdtemp(prefix="schedhot-fleet-")
        os.chmod(self.t, 0o700)
        self.proc = None
        self.cfg = []
        for k in ["host_key", "other_key"] + list(keys):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.path(k)], check=True)
        # HOME is the temp dir's: a login shell reads its rc files there (none), not root's,
        # whose may be slow or serialize sessions (a pyenv rehash lock did, 60 s each).
        home = self.path("home")
        os.mkdir(home)
        with open(self.path("authorized_keys"), "w") as f:
            for k, opts in keys.items():
                f.write('environment="HOME=%s",%s %s\n' % (home, opts, self.pub(k)))
        self.port, self.dead = free_port(), free_port()
        with open(self.path("sshd_config"), "w") as f:
            f.write("\n".join([
                "ListenAddress 127.0.0.1", "Port %d" % self.port, "HostKey %s" % self.path("host_key"),
                "PermitRootLogin prohibit-password", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "AuthorizedKeysFile %s" % self.path("authorized_keys"),
                "StrictModes no", "PermitUserEnvironment PATH,HOME", "UsePAM no",
                # One sshd plays every host: it takes as many connections at once as they would.
                "MaxStartups %d" % max_startups,
                "PidFile %s" % self.path("sshd.pid"), "Subsystem sftp internal-sftp", "LogLevel ERROR", ""]))
        os.makedirs("/run/sshd", exist_ok=True)
        self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", self.path("sshd_config")],
                                     stderr=open(self.path("sshd.log"), "w"))
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        with open(self.path("known_hosts"), "w") as f:
            f.write("[127.0.0.1]:%d %s\n" % (self.port, self.pub("host_key")))
        open(self.path("empty_known_hosts"), "w").close()

    def path(self, name):
        return os.path.join(self.t, name)

    def pub(self, key):
        return open(self.path(key + ".pub")).read().strip()

    def host(self, alias, key, known="known_hosts", port=None):
        """An ssh_config Host entry: alias -> this sshd (or port), logging in with key."""
        self.cfg += ["Host " + alias, "  Port %d" % (port or self.port), "  IdentityFile %s" % self.path(key),
                     "  UserKnownHostsFile %s" % self.path(known), "  HostName 127.0.0.1", "  User root",
                     "  IdentitiesOnly yes", "  BatchMode yes", "  StrictHostKeyChecking yes",
                     "  HostKeyAlias [127.0.0.1]:%d" % self.port]

    def ssh_config(self):
        """Writes the Host entries; the file's path (for -F)."""
        with open(self.path("ssh_config"), "w") as f:
            f.write("\n".join(self.cfg) + "\n")
        return self.path("ssh_config")

    def close(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()
        shutil.rmtree(self.t, ignore_errors=True)
