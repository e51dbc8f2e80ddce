"""The numbers of the README and of the docs pages, generated from the result files (``python -m workflow readme``).

Every number that ``README.md`` or a page of ``docs/`` states about a result lives in a marked block::

    <!-- generated: NAME (python -m workflow readme; from FILES) -->
    ...a table (or a single value) made by the builder NAME (workflow.report.readme_sections.builders)...
    <!-- end generated: NAME -->

``python -m workflow readme`` rewrites each block, wherever it lives (the README and every ``docs/*.md`` beside it),
from the committed files of one profile (``cpu`` by default: ``results/cpu/*.csv``, ``results/cpu/*.json``, the run
JSONs ``results/runs/cpu/``; ``results/timings.csv``); ``--check`` changes nothing and exits 1 naming each page and
block that differs from what the files give, which is what the test suite runs. Each block lives on one page only. Prose
between the blocks carries no result number (``tests/test_readme_numbers.py`` checks the results sections), so a number
in the README or the docs cannot drift from its file. A builder picks a result file's rows and columns and formats each
cell; every table of every block is written by one renderer, :func:`workflow.report.markdown.table`.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from workflow.report.readme_sections import ReadmeError, Sources, builders

BLOCK = re.compile(r"(?P<head><!-- generated: (?P<name>[a-z0-9-]+) "
                   r"\(python -m workflow readme; from (?P<files>[^)]*)\) -->\n)"
                   r"(?P<body>.*?)"
                   r"(?P<tail><!-- end generated: (?P=name) -->)", re.S)


def blocks(text: str) -> dict[str, str]:
    """The generated blocks of one page: name -> body."""
    found = {}
    for m in BLOCK.finditer(text):
        if m["name"] in found:
            raise ReadmeError(f"the block {m['name']!r} appears twice; each generated block once")
        found[m["name"]] = m["body"]
    opened = set(re.findall(r"<!-- generated: ([a-z0-9-]+) ", text))
    if opened - set(found):
        raise ReadmeError(f"block(s) {sorted(opened - set(found))} have no matching '<!-- end generated: NAME -->' line")
    return found


def pages(readme: str | Path = "README.md") -> list[Path]:
    """The pages whose blocks ``readme`` writes: the README, then every ``docs/*.md`` beside it (sorted)."""
    readme = Path(readme)
    if not readme.is_file():
        raise ReadmeError(f"{readme}: no such file")
    return [readme, *sorted((readme.parent / "docs").glob("*.md"))]


def page_blocks(readme: str | Path = "README.md") -> dict[Path, dict[str, str]]:
    """page -> its blocks (name -> body), for the README and its docs pages; a block on two pages is an error."""
    found, home = {}, {}
    for page in pages(readme):
        found[page] = blocks(page.read_text())
        for name in found[page]:
            if name in home:
                raise ReadmeError(f"the block {name!r} is on {home[name]} and on {page}; each generated block on one page")
            home[name] = page
    return found


def render(results: str | Path = "results", profile: str = "cpu", names=None) -> dict[str, tuple[str, str]]:
    """The blocks ``names`` (default: every block there is a builder for), made from the files of ``profile``:
    name -> (files, body)."""
    src = Sources(Path(results), profile)
    if not src.folder.is_dir():
        raise ReadmeError(f"{src.folder}: no such results folder (make it with the {profile} profile, or pass "
                          "--results/--profile of one that exists)")
    made = {}
    for name, block in builders().items():
        if names is None or name in names:
            made[name] = (block.sources(profile), block.make(src).rstrip("\n") + "\n")
    return made


def _rewrite(text: str, made: dict[str, tuple[str, str]], changed: list[str]) -> str:
    def replace(m: re.Match) -> str:
        files, body = made[m["name"]]
        head = f"<!-- generated: {m['name']} (python -m workflow readme; from {files}) -->\n"
        if head + body != m["head"] + m["body"]:
            changed.append(m["name"])
        return head + body + m["tail"]

    return BLOCK.sub(replace, text)


def plan(readme: str | Path = "README.md", results: str | Path = "results", profile: str = "cpu"):
    """page -> (its text now, its text as the files give it, the names of its blocks that differ), for the README
    and its docs pages; every block is made before anything is written, so a missing file changes no page."""
    have = page_blocks(readme)
    for page, found in have.items():
        unknown = sorted(set(found) - set(builders()))
        if unknown:
            raise ReadmeError(f"{page}: unknown generated block(s) {unknown}; known: {sorted(builders())}")
    made = render(results, profile, {name for found in have.values() for name in found})
    out = {}
    for page in have:
        old, changed = page.read_text(), []
        out[page] = (old, _rewrite(old, made, changed), changed)
    return out


def _write(pages_: dict) -> None:
    for page, (_, new, changed) in pages_.items():
        if changed:
            page.write_text(new)


def _diff(pages_: dict) -> str:
    return "".join(line for page, (old, new, _) in pages_.items()
                   for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(page),
                                                    "from the files"))


def update(readme: str | Path = "README.md", results: str | Path = "results", profile: str = "cpu",
           check: bool = False) -> list[str]:
    """Rewrite (or, with ``check``, only compare) every generated block of the README and its docs pages. Returns
    the names of the blocks that differ from what the files give, in page order (with ``check`` nothing is written)."""
    pages_ = plan(readme, results, profile)
    if not check:
        _write(pages_)
    return [name for _, _, changed in pages_.values() for name in changed]


def diff(readme: str | Path, results: str | Path = "results", profile: str = "cpu") -> str:
    """A unified diff of each page now against the page the files give (what ``--check`` found)."""
    return _diff(plan(readme, results, profile))


def main(readme: str, results: str, profile: str, check: bool) -> int:
    """``python -m workflow readme``: 0 when every block is (now) what the files give; with ``--check``, 1 when
    some block differs (it prints which, on which page, and the diff)."""
    import sys

    pages_ = plan(readme, results, profile)
    changed = {page: names for page, (_, _, names) in pages_.items() if names}
    if check and changed:
        for page, names in changed.items():
            print(f"{page}: generated block(s) {names} differ from the files of the '{profile}' profile; "
                  "run `python -m workflow readme` to regenerate them", file=sys.stderr)
        print(_diff(pages_), file=sys.stderr)
        return 1
    if not check:
        _write(pages_)
    count = sum(len(blocks(old)) for old, _, _ in pages_.values())
    print(f"{readme} and {len(pages_) - 1} docs page(s): {count} generated block(s) {'match' if check else 'written'}"
          + ("; rewritten: " + "; ".join(f"{p}: {', '.join(n)}" for p, n in changed.items()) if changed and not check
             else ""))
    return 0
