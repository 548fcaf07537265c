"""Replacing a generated block of a Markdown file: the text between `<!-- NAME -->` and
`<!-- /NAME -->` (the README's tables made from result files, so that no figure in them is typed)."""
import sys


def write_block(path, name, text, check=False, remedy=""):
    """Puts `text` between the markers of block `name` in `path`; with `check`, writes nothing and
    returns 1 (saying so and how to mend it) when the file's block differs. Exits with a message
    when the file has no such block."""
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    old = open(path, encoding="utf-8").read()
    if begin not in old or end not in old:
        sys.exit(f"{path} has no {begin} ... {end} block")
    head, rest = old.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = head + begin + "\n" + text + end + tail
    if check:
        if new != old:
            print(f"{path}'s {name} block is stale: {remedy}", file=sys.stderr)
            return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    return 0
