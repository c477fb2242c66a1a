#!/usr/bin/env python3
"""Write a gzip-compressed newc cpio archive from a gen_init_cpio-style list.

Usage: newc.py LIST OUT.cpio.gz

LIST lines (uid/gid are always 0; '#' starts a comment):
    dir   <name> <mode>
    file  <name> <hostpath> <mode>
    slink <name> <target> <mode>
    nod   <name> <mode> <c|b> <major> <minor>

No root is needed (device nodes are written as archive entries). Output is
reproducible: mtime 0 for every entry and in the gzip header.
"""
import gzip
import os
import stat
import sys


def die(msg):
    sys.stderr.write("newc.py: error: %s\n" % msg)
    sys.exit(1)


class Writer:
    def __init__(self, fp):
        self.fp = fp
        self.ino = 1000
        self.seen = set()

    def _entry(self, name, mode, data=b"", rmaj=0, rmin=0):
        name = name.lstrip("/") or "."
        if stat.S_ISDIR(mode):
            if name in self.seen:      # parent dirs may be listed repeatedly
                return
            self.seen.add(name)
        self.ino += 1
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join("%08X" % v for v in (
            self.ino, mode, 0, 0, 1 if not stat.S_ISDIR(mode) else 2, 0,
            len(data), 0, 0, rmaj, rmin, len(nb), 0))
        self.fp.write(hdr.encode() + nb)
        self.fp.write(b"\0" * ((4 - (110 + len(nb)) % 4) % 4))
        self.fp.write(data)
        self.fp.write(b"\0" * ((4 - len(data) % 4) % 4))

    def dir(self, name, perm):
        self._entry(name, stat.S_IFDIR | perm)

    def file(self, name, host, perm):
        try:
            with open(host, "rb") as f:
                data = f.read()
        except OSError as e:
            die("cannot read %s: %s" % (host, e))
        self._entry(name, stat.S_IFREG | perm, data)

    def slink(self, name, target, perm):
        self._entry(name, stat.S_IFLNK | perm, target.encode())

    def nod(self, name, perm, kind, major, minor):
        t = stat.S_IFCHR if kind == "c" else stat.S_IFBLK
        self._entry(name, t | perm, b"", major, minor)

    def trailer(self):
        self.ino = 0
        self._entry("TRAILER!!!", 0)


def main():
    if len(sys.argv) != 3:
        die("usage: newc.py LIST OUT.cpio.gz")
    lst, out = sys.argv[1], sys.argv[2]
    tmp = out + ".tmp"
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        w = Writer(gz)
        with open(lst) as f:
            for ln, line in enumerate(f, 1):
                p = line.split()
                if not p or p[0].startswith("#"):
                    continue
                try:
                    if p[0] == "dir":
                        w.dir(p[1], int(p[2], 8))
                    elif p[0] == "file":
                        w.file(p[1], p[2], int(p[3], 8))
                    elif p[0] == "slink":
                        w.slink(p[1], p[2], int(p[3], 8))
                    elif p[0] == "nod":
                        w.nod(p[1], int(p[2], 8), p[3], int(p[4]), int(p[5]))
                    else:
                        die("%s:%d: unknown entry type %r" % (lst, ln, p[0]))
                except (IndexError, ValueError):
                    die("%s:%d: malformed line: %s" % (lst, ln, line.strip()))
        w.trailer()
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
