#!/usr/bin/env python3
"""The tables of the notes that are made from committed files, kept as their command makes them (not typed).

A block of a Markdown file is

    <!-- made by: scripts/NAME.py ARG ... -->
    (the command's output, line for line)
    <!-- /made by -->

The command runs from the repository's root as `python3 scripts/NAME.py ARG ...` (a script of scripts/, its
arguments split as a shell would split them, no shell), and its standard output is the block's content.

    scripts/generated_blocks.py [--check] FILE...

writes each block's content anew; --check writes nothing and exits 1 naming every block whose content is not
what its command prints now (the CTest notes_tables_are_current runs it on the notes that hold blocks).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = re.compile(r"^<!-- made by: (.+) -->$")
END = "<!-- /made by -->"


def run(command, where):
    argv = shlex.split(command)
    if not argv or not re.fullmatch(r"scripts/[\w.-]+\.py", argv[0]):
        sys.exit(f"{where}: a block's command must be a script of scripts/ (got: {command})")
    out = subprocess.run([sys.executable] + argv, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{where}: `{command}` failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout.splitlines()


def remake(path):
    """The file's lines with every block remade, and the (line, command) of each block that changed."""
    lines = open(path).read().split("\n")
    out, changed, i = [], [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        start = i
        while i < len(lines) and lines[i] != END:
            if BEGIN.match(lines[i]):
                sys.exit(f"{path}:{i + 1}: a block opens inside the block of line {start}")
            i += 1
        if i == len(lines):
            sys.exit(f"{path}:{start}: the block has no {END}")
        made = run(m.group(1), f"{path}:{start}")
        if made != lines[start:i]:
            changed.append((start, m.group(1)))
        out += made
    return "\n".join(out), changed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    stale = 0
    for path in a.files:
        text, changed = remake(path)
        for line, command in changed:
            print(f"{path}:{line}: {'stale' if a.check else 'remade'}: {command}")
        stale += len(changed)
        if changed and not a.check:
            open(path, "w").write(text)
    if a.check and stale:
        sys.exit(f"{stale} block(s) stale: run scripts/generated_blocks.py {' '.join(a.files)}")


if __name__ == "__main__":
    main()
