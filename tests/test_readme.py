"""The Python examples of the README and of its docs pages run as written (issue 15: "a README example that RUNS";
issue 35 moved the library's example to docs/library.md)."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCKS = [(page.relative_to(REPO), block) for page in PAGES
          for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)]


def test_the_library_page_has_python_examples():
    assert any(page.name == "library.md" for page, _ in BLOCKS), "docs/library.md has no ```python block"


@pytest.mark.parametrize("i", range(len(BLOCKS)), ids=[f"{page}-{i}" for i, (page, _) in enumerate(BLOCKS)])
def test_readme_python_block_runs(i, capsys):
    page, block = BLOCKS[i]
    exec(compile(block, f"{page} python block {i}", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    if "rstar(" in block:
        assert "r* = 0.2" in out  # printed, from the code above it
