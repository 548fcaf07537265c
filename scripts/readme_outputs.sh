#!/usr/bin/env bash
# Puts the quick-start commands' real output into README.md, between its
# <!-- quickstart-output --> and <!-- test-output --> markers, from the logs kept in
# results/quickstart/ (what a real run printed; results/README.md says where each came from), so
# that no line of it is typed by hand. --check: exit 1 when README.md differs from what it would write.
#   scripts/readme_outputs.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - "${1:-}" <<'PY'
import sys

def block(path, keep):
    # A log's first line, "# ...", says where it came from (results/README.md); it is not output.
    lines = [l for l in open(path).read().rstrip("\n").split("\n") if not l.startswith("# ")]
    if len(lines) > keep:
        lines = ["..."] + lines[-keep:]
    return "```\n" + "\n".join(lines) + "\n```\n"

readme = open("README.md").read()
new = readme
for marker, path, keep in [("quickstart-output", "results/quickstart/quickstart.log", 22),
                           ("test-output", "results/quickstart/test.log", 12)]:
    begin, end = f"<!-- {marker} -->", f"<!-- /{marker} -->"
    if begin not in new or end not in new:
        sys.exit(f"readme_outputs: README.md has no {begin} ... {end} block")
    head, rest = new.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = head + begin + "\n" + block(path, keep) + end + tail
if sys.argv[1] == "--check":
    if new != readme:
        sys.exit("README.md's command output is stale: run scripts/readme_outputs.sh")
elif new != readme:
    open("README.md", "w").write(new)
PY
