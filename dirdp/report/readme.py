"""The README's numbers, generated from the result files (``python -m dirdp readme``).

Every number the top-level ``README.md`` states about a result lives in a marked block::

    <!-- generated: NAME (python -m dirdp readme; from FILES) -->
    ...text made by dirdp.report.readme_sections.NAME...
    <!-- end generated: NAME -->

``python -m dirdp readme`` rewrites each block from the committed files of one profile (``cpu`` by default:
``results/cpu/*.csv``, its executed notebooks, its run JSONs ``results/runs/cpu/``); ``--check`` changes nothing
and exits 1 naming each block that differs from what the files give, which is what the test suite runs. Prose
between the blocks carries no result number (``tests/test_readme_numbers.py`` checks that too), so a number in
the README cannot drift from its file.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from dirdp.report.readme_sections import ReadmeError, Sources, builders

BLOCK = re.compile(r"(?P<head><!-- generated: (?P<name>[a-z0-9-]+) \(python -m dirdp readme; from (?P<files>[^)]*)\) -->\n)"
                   r"(?P<body>.*?)"
                   r"(?P<tail><!-- end generated: (?P=name) -->)", re.S)




def blocks(text: str) -> dict[str, str]:
    """The generated blocks of a README: name -> body."""
    found = {}
    for m in BLOCK.finditer(text):
        if m["name"] in found:
            raise ReadmeError(f"the block {m['name']!r} appears twice; each generated block once")
        found[m["name"]] = m["body"]
    opened = set(re.findall(r"<!-- generated: ([a-z0-9-]+) ", text))
    if opened - set(found):
        raise ReadmeError(f"block(s) {sorted(opened - set(found))} have no matching '<!-- end generated: NAME -->' line")
    return found


def render(results: str | Path = "results", profile: str = "cpu") -> dict[str, tuple[str, str]]:
    """Every block, made from ``results/<profile>/`` and ``results/runs/<profile>/``: name -> (files, body)."""
    src = Sources(Path(results), profile)
    if not src.folder.is_dir():
        raise ReadmeError(f"{src.folder}: no such results folder (make it with the {profile} profile, or pass "
                          "--results/--profile of one that exists)")
    made = {}
    for name, (build, files) in builders().items():
        body = build(src).rstrip("\n") + "\n"
        made[name] = (files.format(p=profile), body)
    return made


def update(readme: str | Path = "README.md", results: str | Path = "results", profile: str = "cpu",
           check: bool = False) -> list[str]:
    """Rewrite (or, with ``check``, only compare) every generated block of ``readme``. Returns the names of the
    blocks that differ from what the files give (with ``check``, the README is left as it is)."""
    readme = Path(readme)
    if not readme.is_file():
        raise ReadmeError(f"{readme}: no such file")
    text = readme.read_text()
    have = blocks(text)
    made = render(results, profile)
    unknown = sorted(set(have) - set(made))
    if unknown:
        raise ReadmeError(f"{readme}: unknown generated block(s) {unknown}; known: {sorted(made)}")
    changed = []

    def replace(m: re.Match) -> str:
        files, body = made[m["name"]]
        head = f"<!-- generated: {m['name']} (python -m dirdp readme; from {files}) -->\n"
        if head + body != m["head"] + m["body"]:
            changed.append(m["name"])
        return head + body + m["tail"]

    new = BLOCK.sub(replace, text)
    if changed and not check:
        readme.write_text(new)
    return changed


def diff(readme: str | Path, results: str | Path = "results", profile: str = "cpu") -> str:
    """A unified diff of the README now against the README the files give (what ``--check`` found)."""
    old = Path(readme).read_text()
    made = render(results, profile)
    new = BLOCK.sub(lambda m: (f"<!-- generated: {m['name']} (python -m dirdp readme; from {made[m['name']][0]}) -->\n"
                               + made[m["name"]][1] + m["tail"]) if m["name"] in made else m[0], old)
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(readme), "from the files"))


def main(readme: str, results: str, profile: str, check: bool) -> int:
    """``python -m dirdp readme``: 0 when every block is (now) what the files give; with ``--check``, 1 when
    some block differs (it prints which, and the diff)."""
    import sys

    changed = update(readme, results, profile, check=check)
    if check and changed:
        print(f"{readme}: generated block(s) {changed} differ from the files of the '{profile}' profile; "
              "run `python -m dirdp readme` to regenerate them", file=sys.stderr)
        print(diff(readme, results, profile), file=sys.stderr)
        return 1
    verb = "match" if check else "written"
    print(f"{readme}: {len(blocks(Path(readme).read_text()))} generated block(s) {verb}"
          + (f"; rewritten: {', '.join(changed)}" if changed and not check else ""))
    return 0
