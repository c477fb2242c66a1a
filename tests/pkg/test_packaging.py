#!/usr/bin/env python3
"""What the build lays out for packages, checked against the programs themselves (label pkg).

Usage: test_packaging.py BUILD_DIR SOURCE_DIR

  - one version: CMakeLists.txt's project() = `schedhot --version` = the RPM spec's Version
    (packaging/build-deb.sh writes debian/changelog from the same line); rpmspec parses
    the spec;
  - schedhot(1): every command of `schedhot --help` has its section, and every option and
    argument of `schedhot COMMAND --help` is in it; every probe is in PROBES; groff warns
    about nothing (as lintian runs it);
  - schedhot-fleet(1): every option and step of `schedhot-fleet --help` is in it;
  - bash completion (bash-completion's own functions loaded): commands, each command's
    options = its --help's, --backend/--format choices = --help's {..}, probe names (and
    after a comma), --sort columns, recordings (*.shot, *.shot.N, directories; nothing
    else) for FILE arguments;
  - zsh completion (a real interactive zsh under zpty, compinit): commands, an option,
    probe names after a comma, recordings;
  - DESTDIR=... cmake --install: exactly the expected files under the configured prefix;
    the units' ExecStart and EnvironmentFile name them; systemd-analyze verify passes.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from checks import check, failures, finish, run





def help_commands(schedhot):
    out = run([schedhot, "--help"]).stdout
    sec = out.split("Subcommands:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^  (\w+)\s", sec, re.M)]


def help_options(argv):
    """Options (-x, --long) and positionals (NAME) of a CLI11 --help."""
    out = run(argv + ["--help"]).stdout
    opts, pos, choices = [], [], {}
    section = None
    for line in out.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            section = line[:-1]
            continue
        m = re.match(r"^  (-\w)?,?(--[\w-]+)?(?: (\S+))?", line)
        if section == "Positionals" and re.match(r"^  (\w+)", line):
            pos.append(re.match(r"^  (\w+)", line).group(1))
        elif section == "Options" and m and (m.group(1) or m.group(2)):
            opts += [o for o in (m.group(1), m.group(2)) if o]
            c = re.search(r":\{([^}]*)\}", m.group(3) or "")
            if c:
                choices[m.group(2)] = c.group(1).split(",")
    return opts, pos, choices


def man_text(page):
    env = dict(os.environ, MANWIDTH="250", LC_ALL="C.UTF-8", MAN_DISABLE_SECCOMP="1")
    r = run(["man", "-l", page], env=env)
    return re.sub(r".\x08", "", r.stdout)


def groff_warnings(page):
    env = dict(os.environ, LC_ALL="C.UTF-8", MANROFFSEQ="", MANWIDTH="80", MAN_DISABLE_SECCOMP="1")
    r = run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", page], env=env)
    return r.stderr.strip()


def probe_catalog(schedhot):
    """The probe names, from schedhot's own error for an unknown one (after the privilege check: root)."""
    r = run([schedhot, "probes", "--probes", "no_such_probe"])
    m = re.search(r"\(probes: ([^)]*)\)", r.stderr)
    return m.group(1).split(", ") if m else None


BASH_HARNESS = r'''
source /usr/share/bash-completion/bash_completion
source "$1"; shift
compopt() { :; }   # outside readline
COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
read -r -a COMP_WORDS <<< "$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_schedhot schedhot "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''

ZSH_HARNESS = r'''
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='' RPROMPT=''; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; zstyle ':completion:*' list-separator '::'; LISTMAX=10000"
sleep 0.5; while zpty -r -t z line; do :; done
zpty -w -n z "$2"$'\t'
sleep 1.5
out=''; while zpty -r -t z chunk; do out+=$chunk; done
print -r -- "$out"
zpty -d z
'''


def bash_complete(script, line, cwd):
    r = run(["bash", "-c", BASH_HARNESS, "harness", script, line], cwd=cwd)
    return sorted(w for w in r.stdout.split("\n") if w) if r.returncode == 0 else ["<bash failed: %s>" % r.stderr]


def zsh_complete(fpath, line, cwd):
    r = run(["zsh", "-f", "-c", ZSH_HARNESS, "harness", fpath, line], cwd=cwd, env=dict(os.environ, TERM="dumb"))
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|[\r\x07]", "", r.stdout)


def main():
    build, src = (os.path.abspath(a) for a in sys.argv[1:3])
    schedhot = os.path.join(build, "schedhot")
    fleet = os.path.join(src, "src", "fleet", "schedhot-fleet")
    gen = os.path.join(build, "packaging")

    # ---- one version ----
    cm = re.search(r"^project\(schedhot VERSION ([0-9.]+)", open(os.path.join(src, "CMakeLists.txt")).read(), re.M)
    version = cm.group(1) if cm else None
    got = run([schedhot, "--version"]).stdout.strip()
    check(version and got == version, "schedhot --version %r = CMakeLists.txt's project() %r" % (got, version))
    spec = os.path.join(src, "packaging", "rpm", "schedhot.spec")
    sv = re.search(r"^Version:\s*(\S+)", open(spec).read(), re.M)
    check(sv and sv.group(1) == version, "RPM spec Version %r = %r" % (sv and sv.group(1), version))
    if shutil.which("rpmspec"):
        r = run(["rpmspec", "-P", spec])
        check(r.returncode == 0 and re.search(r"^Version:\s*%s$" % re.escape(version), r.stdout, re.M) is not None,
              "rpmspec -P parses the spec (%d: %s)" % (r.returncode, r.stderr.strip()[-300:]))
    else:
        check(False, "rpmspec is installed (Debian package rpm, packaging/deps.txt)")
    bd = open(os.path.join(src, "packaging", "build-deb.sh")).read()
    check("project(schedhot VERSION" in bd and "schedhot ($version)" in bd,
          "build-deb.sh writes debian/changelog's version from CMakeLists.txt's project() line")

    # ---- schedhot(1) against --help ----
    page = os.path.join(gen, "schedhot.1")
    text = man_text(page)
    check(groff_warnings(page) == "", "schedhot(1): no groff warnings: %r" % groff_warnings(page))
    cmds = help_commands(schedhot)
    check(len(cmds) >= 9, "schedhot --help lists the commands: %s" % cmds)
    heads = [(m.start(), m.group(1)) for m in re.finditer(r"^   schedhot (\w+) \[OPTIONS\]", text, re.M)]
    check([h[1] for h in heads] == cmds, "schedhot(1) has a section per command, in --help's order: %s" % [h[1] for h in heads])
    sections = {}
    for i, (start, name) in enumerate(heads):
        end = heads[i + 1][0] if i + 1 < len(heads) else text.index("\nPROBES")
        sections[name] = text[start:end]
    all_choices = {}
    for c in cmds:
        opts, pos, choices = help_options([schedhot, c])
        all_choices[c] = choices
        sec = sections.get(c, "")
        # an entry of its own: a tag line "       -d, --duration DURATION" (not a mention in a description)
        tags = set()
        for m in re.finditer(r"^       ((?:-[\w-]+(?:, )?)+)", sec, re.M):
            tags.update(m.group(1).split(", "))
        missing = [o for o in opts if o not in tags]
        missing += [p for p in pos if not re.search(r"^       %s(\.\.\.)?(\s|$)" % p.upper(), sec, re.M)]
        check(opts and not missing, "schedhot(1) %s: all %d options and %s of --help, missing: %s" % (c, len(opts), pos, missing))
        for o, ch in choices.items():
            check("{%s}" % "|".join(ch) in sec, "schedhot(1) %s %s {%s}" % (c, o, "|".join(ch)))
    probes = probe_catalog(schedhot) if os.geteuid() == 0 else None
    if probes is None:
        print("note: not root: the probe names are not read from schedhot (its error lists them after the privilege check)")
        probes = re.findall(r"^       (\w+) \(", text.split("\nPROBES", 1)[1].split("\nPRIVILEGES")[0], re.M)
    else:
        ptext = text.split("\nPROBES", 1)[1].split("\nPRIVILEGES")[0]
        listed = re.findall(r"^       (\w+) \(", ptext, re.M)
        check(listed == probes, "schedhot(1) PROBES lists the catalog %s: %s" % (probes, listed))

    # ---- schedhot-fleet(1) against --help ----
    fpage = os.path.join(gen, "schedhot-fleet.1")
    ftext = man_text(fpage)
    check(groff_warnings(fpage) == "", "schedhot-fleet(1): no groff warnings: %r" % groff_warnings(fpage))
    fh = run(["/usr/bin/python3", fleet, "--help"]).stdout
    fopts = sorted(set(re.findall(r"(?:^|[\s,\[])(--?[\w][\w-]*)", fh.split("options:", 1)[1])))
    steps = re.search(r"\{([a-z,]+)\}", fh).group(1).split(",")
    fmissing = [o for o in fopts if not re.search(r"(^|[\s,\[])%s\b" % re.escape(o), ftext)]
    fmissing += [s for s in steps if not re.search(r"^       %s\b" % s, ftext, re.M)]
    check(len(fopts) > 20 and not fmissing, "schedhot-fleet(1): all %d options and %d steps of --help, missing: %s"
          % (len(fopts), len(steps), fmissing))
    check(re.search(r"^SCHEDHOT-FLEET\(1\).*\n\nNAME\n\s+schedhot-fleet - ", ftext) is not None, "schedhot-fleet(1) NAME")

    # ---- bash completion ----
    bash = os.path.join(gen, "schedhot.bash")
    tmp = tempfile.mkdtemp(prefix="schedhot-pkg-")
    files = os.path.join(tmp, "files")
    os.makedirs(os.path.join(files, "sub"))
    for f in ("a.shot", "a.shot.1", "a.shot.12", "a.shot.old", "b.txt", "c.shot.1x"):
        open(os.path.join(files, f), "w").close()
    recs = ["a.shot", "a.shot.1", "a.shot.12", "sub"]
    check(bash_complete(bash, "schedhot ", files) == sorted(cmds), "bash: 'schedhot ' -> the commands of --help")
    check(bash_complete(bash, "schedhot rec", files) == ["record"], "bash: 'schedhot rec' -> record")
    for c in cmds:
        opts, pos, _ = help_options([schedhot, c])
        want = sorted(o for o in opts if o.startswith("--"))
        got = bash_complete(bash, "schedhot %s --" % c, files)
        check(got == want, "bash: 'schedhot %s --' -> its --help's long options%s" % (c, "" if got == want else ": %s vs %s" % (got, want)))
        for o, ch in all_choices[c].items():
            got = bash_complete(bash, "schedhot %s %s " % (c, o), files)
            check(got == sorted(ch), "bash: 'schedhot %s %s ' -> %s: %s" % (c, o, ch, got))
        if pos:
            got = bash_complete(bash, "schedhot %s " % c, files)
            check(got == recs, "bash: 'schedhot %s ' -> recordings and directories %s: %s" % (c, recs, got))
    got = bash_complete(bash, "schedhot record --probes ", files)
    check(got == sorted(["all"] + probes), "bash: --probes -> all and the probes %s: %s" % (probes, got))
    got = bash_complete(bash, "schedhot top --probes cpupri_set,nohz_e", files)
    check(got == ["cpupri_set,nohz_enter", "cpupri_set,nohz_exit"], "bash: --probes after a comma: %s" % got)
    check(bash_complete(bash, "schedhot report --sort set_", files) == ["set_p99"], "bash: --sort set_ -> set_p99")
    check(bash_complete(bash, "schedhot record -o a.", files) == ["a.shot", "a.shot.1", "a.shot.12"],
          "bash: record -o -> recordings: %s" % bash_complete(bash, "schedhot record -o a.", files))
    check(bash_complete(bash, "schedhot diff a.shot ", files) == recs, "bash: diff's second FILE -> recordings")

    # ---- zsh completion ----
    zdir = os.path.join(tmp, "zsh")
    os.makedirs(zdir)
    shutil.copy(os.path.join(gen, "_schedhot"), zdir)
    out = zsh_complete(zdir, "schedhot ", files)
    check(all(re.search(r"^%s\s+:: " % c, out, re.M) for c in cmds), "zsh: 'schedhot ' lists every command with its description")
    out = zsh_complete(zdir, "schedhot record --pro", files)
    check(out.rstrip().endswith("schedhot record --probes="), "zsh: 'record --pro' -> --probes=: %r" % out[-80:])
    out = zsh_complete(zdir, "schedhot record --probes nohz_exit,cpupri_s", files)
    check(out.rstrip().endswith("--probes nohz_exit,cpupri_set,"), "zsh: a probe after a comma: %r" % out[-80:])
    out = zsh_complete(zdir, "schedhot info ", files)
    shown = re.findall(r"[\w./]+", out.split("\n", 1)[1]) if "\n" in out else []
    check(sorted(w for w in shown if w != "schedhot" and w != "info") == ["a.shot", "a.shot.1", "a.shot.12", "sub/"],
          "zsh: 'info ' -> recordings and directories: %s" % shown)

    # ---- cmake --install into DESTDIR; the units ----
    dest = os.path.join(tmp, "dest")
    cache = open(os.path.join(build, "CMakeCache.txt")).read()
    prefix = re.search(r"^CMAKE_INSTALL_PREFIX:PATH=(.*)$", cache, re.M).group(1)
    unitdir = re.search(r"^SCHEDHOT_SYSTEMD_UNITDIR:PATH=(.*)$", cache, re.M).group(1)
    if not unitdir:  # CMakeLists.txt's default
        unitdir = (run(["pkg-config", "--variable=systemdsystemunitdir", "systemd"]).stdout.strip()
                   if prefix == "/usr" else "") or prefix + "/lib/systemd/system"
    r = run(["cmake", "--install", build], env=dict(os.environ, DESTDIR=dest))
    check(r.returncode == 0, "DESTDIR=%s cmake --install (%s)" % (dest, r.stderr.strip()))
    etc = "/etc" if prefix == "/usr" else prefix + "/etc"
    want = sorted([prefix + "/bin/schedhot", prefix + "/bin/schedhot-fleet",
                   prefix + "/share/man/man1/schedhot.1", prefix + "/share/man/man1/schedhot-fleet.1",
                   prefix + "/share/bash-completion/completions/schedhot",
                   prefix + "/share/zsh/vendor-completions/_schedhot",
                   prefix + "/share/doc/schedhot/examples/vm-7.3.shot",
                   unitdir + "/schedhot-record.service", unitdir + "/schedhot-serve.service",
                   etc + "/default/schedhot"])
    got = sorted("/" + os.path.relpath(os.path.join(d, f), dest) for d, _, fs in os.walk(dest) for f in fs)
    check(got == want, "installed exactly %s: %s" % (want, got))
    units = []
    for u in ("schedhot-record", "schedhot-serve"):
        body = open(dest + unitdir + "/%s.service" % u).read()
        check("ExecStart=%s/bin/schedhot %s " % (prefix, u.split("-")[1]) in body, "%s: ExecStart runs %s/bin/schedhot" % (u, prefix))
        check("EnvironmentFile=-%s/default/schedhot\n" % etc in body, "%s: EnvironmentFile=-%s/default/schedhot" % (u, etc))
        # systemd-analyze verify here: the installed unit with ExecStart pointed at this build's schedhot
        # (the clean-root test verifies the packaged units as they are, man page included).
        p = os.path.join(tmp, "%s.service" % u)
        open(p, "w").write(body.replace("%s/bin/schedhot" % prefix, schedhot))
        units.append(p)
    r = run(["systemd-analyze", "verify", "--man=no"] + units)
    check(r.returncode == 0 and r.stdout + r.stderr == "", "systemd-analyze verify: both units (%d: %s)"
          % (r.returncode, (r.stdout + r.stderr).strip()))
    rec = open(dest + unitdir + "/schedhot-record.service").read()
    for d in ("StateDirectory=schedhot", "DynamicUser=yes", "NoNewPrivileges=yes", "ProtectSystem=strict",
              "ProtectHome=yes", "PrivateTmp=yes", "Restart=on-failure",
              "-d 0 ", "--max-size ${SCHEDHOT_MAX_SIZE}", "--rotate ${SCHEDHOT_ROTATE}", "-i ${SCHEDHOT_INTERVAL}",
              "--probes ${SCHEDHOT_PROBES}", "-o /var/lib/schedhot/record.shot"):
        check(d in rec, "schedhot-record.service has %s" % d)

    shutil.rmtree(tmp)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
