#!/usr/bin/env python3
"""build/schedhot looks for no code in a tree (issue 28 item 1): no RPATH or RUNPATH, no
needed library by path, and neither the build nor the source directory (nor the old
lib/schedhot search directory, nor libssl.so) in what it loads (`strings -a` without debug sections).
The installed binary gets the same check in test_deb.py. Seconds.
Usage: test_binary.py SCHEDHOT BUILD_DIR SOURCE_DIR"""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import binary_path_problems, check, finish  # noqa: E402

exe, build, src = sys.argv[1], os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
problems = binary_path_problems(exe, [build])
check(not problems, "%s: no search path, no build-tree path%s" % (exe, "".join("\n     " + p for p in problems)))
# The source directory (the embedded BPF objects' BTF named their files by it before
# -ffile-prefix-map; the packaged binary's source directory is inside its build tree).
problems = binary_path_problems(exe, [src])
check(not problems, "%s: no path under %s%s" % (exe, src, "".join("\n     " + p for p in problems)))
sys.exit(finish())
