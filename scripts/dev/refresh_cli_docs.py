#!/usr/bin/env python3
"""Reruns every `$ ` command in docs/cli.md's ```console blocks with the given
mxlimit first on the PATH and writes the outputs back (the check is
tests/cli/run_docs.sh). Review the diff before committing.

    scripts/dev/refresh_cli_docs.py build/dev/mxlimit
"""
import os
import subprocess
import sys
import tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
bindir = tempfile.mkdtemp()
os.symlink(os.path.abspath(sys.argv[1]), os.path.join(bindir, "mxlimit"))
env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
path = os.path.join(root, "docs", "cli.md")
out, inside, skipping = [], False, False
for line in open(path).read().split("\n"):
    if not inside:
        out.append(line)
        inside = line == "```console"
        continue
    if line == "```":
        inside, skipping = False, False
        out.append(line)
    elif line.startswith("$ "):
        out.append(line)
        run = subprocess.run(["sh", "-c", line[2:]], cwd=root, env=env,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        out.extend(run.stdout.rstrip("\n").split("\n") if run.stdout else [])
        skipping = True
    elif not skipping:
        out.append(line)
open(path, "w").write("\n".join(out))
