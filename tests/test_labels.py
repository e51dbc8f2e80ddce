"""The result CSVs carry keys; workflow.report.labels is the one place that turns them into what a reader sees (issue
60's typed fields). Every key renders its sentence (the sentences the CSVs carried before they were keys), and nothing
in the workflow reads a sentence back: no comparison of a CSV field with a generated sentence outside labels.py."""

import ast
import json
import math
import re
from collections import namedtuple
from pathlib import Path

import pandas as pd
import pytest

from workflow.report import compare, labels

REPO = Path(__file__).resolve().parents[1]
nan = math.nan


def test_every_verdict_key_renders_its_sentence():
    assert {k: labels.verdict(k, 3) for k in labels.VERDICTS} == {
        "within": "within 1 point of the paper",
        "below_within": "below the paper, within 1 point",
        "above_within": "above the paper, within 1 point",
        "below": "below the paper",
        "above": "above the paper",
        "undecided": "undecided (n = 3)",
        "one_run": "no verdict (n = 1)",
    }
    assert labels.verdict("undecided", 5) == "undecided (n = 5)"
    assert labels.verdict("undecided", 2.0) == "undecided (n = 2)"  # n as a CSV reads it back: a float
    assert labels.verdict(compare.ONE_RUN, 1) == "no verdict (n = 1)"
    assert labels.verdict(None, 3) is None and labels.verdict(nan, 3) is None
    with pytest.raises(KeyError):
        labels.verdict("within 1 point of the paper", 3)  # a sentence is no key


def test_compare_makes_only_keys_labels_renders():
    ends = [-3.0, -1.0, -0.5, -0.01, 0.0, 0.01, 0.5, 1.0, 3.0]
    made = {compare.verdict(lo, hi, n) for lo in ends for hi in ends if lo <= hi for n in (1, 2, 5)}
    assert made == set(labels.VERDICTS)  # every verdict is reached, and each has its sentence
    made = {compare.diff_interval(90.0, std, n, 91.0, paper_std)["interval"]
            for std, n, paper_std in ((0.5, 3, 0.2), (None, 1, 0.2), (None, 1, None), (0.5, 3, None))}
    assert made == {"welch", compare.PAPER_SPREAD_ONLY, "no_paper_spread"} == set(labels.INTERVALS)


def test_every_interval_key_renders_its_sentence():
    assert labels.interval("welch", 3.5) == "Welch (df = 3.5)"
    assert labels.interval("welch", 3.46) == "Welch (df = 3.5)"
    assert labels.interval("paper_spread") == "paper spread only (n = 1)"
    assert labels.interval("no_paper_spread") == "none (the paper prints no spread)"
    assert labels.interval(None) is None and labels.interval(nan) is None
    assert labels.interval_long("welch", 3.5) == "95% CI, Welch (df = 3.5)"
    assert labels.interval_long("paper_spread") == "95% prediction interval (n = 1, the paper's spread)"
    assert labels.interval_long("paper_spread", nan) == "95% prediction interval (n = 1, the paper's spread)"
    assert labels.interval_long("no_paper_spread") == "none (the paper prints no spread)"
    assert labels.interval_long(None) == labels.interval_long(nan) == ""


def _row(status, **kw):
    return dict(dict(status=status, verdict=None, n=3, width=1.0, norm="batch", method="Algorithm 1", why=None), **kw)


def test_every_status_key_renders_its_sentence():
    assert labels.status(_row("compared", verdict="within")) == "within 1 point of the paper"
    assert labels.status(_row("compared", verdict="below_within", width=0.25)) == \
        "below the paper, within 1 point (reduced width)"
    assert labels.status(_row("compared", verdict="undecided", width=0.5)) == "undecided (n = 3) (reduced width)"
    assert labels.status(_row("compared", verdict="one_run", n=1)) == "no verdict (n = 1)"
    assert labels.status(_row("no_spread")) == "no spread printed"
    assert labels.status(_row("no_spread", width=0.25)) == "no spread printed (reduced width)"
    # a reduced protocol, no value in the paper, a cited number, a cell not run: never "(reduced width)"
    assert labels.status(_row("not_comparable", width=0.25)) == "not comparable (reduced protocol)"
    assert labels.status(_row("no_paper_value", width=0.25)) == "no value printed in the paper"
    assert labels.status(_row("cited", width=nan, n=0)) == "cited by the paper; not run here"
    assert labels.status(_row("not_run", why="why", width=nan, n=0)) == "not run here (why)"
    assert labels.status(_row("not_run", why="not in the 'cpu' profile's grid", width=nan, n=0)) == \
        "not run here (not in the 'cpu' profile's grid)"
    assert labels.status(_row(None)) == labels.status(_row(nan)) == ""


def test_groupnorm_is_said_for_algorithm_1s_option_only():
    gn = _row("compared", verdict="one_run", n=1, width=0.25, norm="group")
    assert labels.status(gn) == "no verdict (n = 1) (reduced width) (GroupNorm, not the paper's model)"
    assert labels.status(dict(gn, status="no_paper_value")) == \
        "no value printed in the paper (GroupNorm, not the paper's model)"
    assert labels.status(dict(gn, method="DP-SGD")) == "no verdict (n = 1) (reduced width)"  # its model's own norm


def test_a_status_reads_the_same_from_a_mapping_and_a_namedtuple():
    rows = [_row("compared", verdict="above", width=0.25), _row("not_run", why="x", width=nan, n=0),
            _row("no_spread", norm="group")]
    table = pd.DataFrame(rows)
    assert [labels.status(r) for r in table.itertuples()] == [labels.status(r) for r in table.to_dict("records")] == [
        "above the paper (reduced width)", "not run here (x)", "no spread printed (GroupNorm, not the paper's model)"]
    Row = namedtuple("Row", "status verdict n width")  # a row without norm or method: no GroupNorm said
    assert labels.status(Row("compared", "within", 2, 1.0)) == "within 1 point of the paper"


def test_the_privacy_costs_keys_render_which_side_is_missing():
    Cost = namedtuple("Cost", "eps n_eps n_inf status interval interval_df")
    assert labels.cost_status(Cost(2.0, 0, 3, "not_run", None, None)) == "no full-width run at eps = 2 yet"
    assert labels.cost_status(Cost(0.5, 0, 0, "not_run", None, None)) == "no full-width run at eps = 0.5 or inf yet"
    assert labels.cost_status(Cost(1.0, 2, 0, "not_run", None, None)) == "no full-width run at eps = inf yet"
    assert labels.cost_status(Cost(4.0, 2, 3, "no_common_precision", None, None)) == \
        "no precision run at full width at both eps"
    assert labels.cost_interval(Cost(2.0, 3, 3, "both_run", "welch", 3.5)) == "95% CI, Welch (df = 3.5)"
    assert labels.cost_interval(Cost(1.0, 1, 3, "both_run", "one_run", None)) == "none (one run at eps = 1)"
    assert labels.cost_interval(Cost(2.0, 1, 1, "both_run", "one_run", None)) == "none (one run at eps = 2 and inf)"
    assert labels.cost_interval(Cost(4.0, 3, 1, "both_run", "one_run", None)) == "none (one run at eps = inf)"
    assert labels.cost_interval(Cost(4.0, 0, 0, "not_run", nan, nan)) == ""


def test_origins_and_data_sets():
    assert labels.ORIGINS == {"here": "run here", "paper": "paper", "cited": "paper, cited", "not_run": "not run"}
    assert labels.DATASETS == {"mnist": "MNIST", "fashionmnist": "FashionMNIST", "cifar10": "CIFAR10",
                               "svhn": "SVHN", "dermamnist": "DermaMNIST"}
    assert labels.dataset("cifar10") == "CIFAR10" and labels.dataset("other") == "other"


def test_readable_turns_every_typed_field_into_its_sentence_and_leaves_the_table_alone():
    table = pd.DataFrame([
        _row("compared", origin="here", verdict="below", width=0.25, interval="welch", interval_df=3.5),
        _row("compared", origin="here", verdict="one_run", n=1, interval="paper_spread", interval_df=nan),
        _row("not_run", origin="paper", why="result file missing: run the DAG", n=0, width=nan, interval=nan,
             interval_df=nan),
        _row("cited", origin="cited", n=0, width=nan, interval=nan, interval_df=nan),
        _row("not_run", origin="not_run", why="x", n=0, width=nan, interval=nan, interval_df=nan),
    ])
    before = table.copy()
    t = labels.readable(table)
    pd.testing.assert_frame_equal(table, before)  # a copy: the keys stay in the table
    assert list(t.origin) == ["run here", "run here", "paper", "paper, cited", "not run"]
    assert list(t.status) == ["below the paper (reduced width)", "no verdict (n = 1)",
                              "not run here (result file missing: run the DAG)", "cited by the paper; not run here",
                              "not run here (x)"]
    assert list(t.verdict[:2]) == ["below the paper", "no verdict (n = 1)"] and t.verdict[2:].isna().all()
    assert list(t.interval[:2]) == ["Welch (df = 3.5)", "paper spread only (n = 1)"] and t.interval[2:].isna().all()


def test_show_prints_sentences_not_keys():
    from workflow.report.objects import COLUMNS, show

    table = pd.DataFrame([
        dict(_row("compared", verdict="within", n=2, interval="welch", interval_df=2.5), origin="here", eps=2.0,
             mean=91.1, std=0.1, paper=91.13, paper_std=0.18),
        dict(_row("not_run", why="data set left out of this DAG", n=0, width=nan), origin="paper", eps=4.0,
             paper=91.69, paper_std=0.14),
    ]).reindex(columns=COLUMNS)
    text = show(table)
    assert "within 1 point of the paper" in text and "not run here (data set left out of this DAG)" in text
    assert "run here" in text and "Welch" not in text  # origin as read; show prints no interval column
    assert not re.search(r"\b(compared|not_run|within)\b", text.replace("within 1 point", "")), text


# -- nothing reads a sentence back ----------------------------------------------------------------------------------

def _sentences() -> list[str]:
    """The fixed text of every sentence labels renders (up to the first placeholder), and of its composites. Labels
    that are also keys (origin "paper") or the values of the hand-transcribed paper_accuracy.csv's own ``label``
    column ("paper", "paper, cited": an input, unchanged) are no generated sentence there."""
    from workflow import paper

    own = set(paper.accuracy("table2_mnist").label) | set(paper.accuracy("table1_cifar10").label)
    assert own == {"paper", "paper, cited"}
    texts = [*labels.VERDICTS.values(), *labels.INTERVALS.values(), *labels.STATUSES.values(),
             *(v for v in labels.ORIGINS.values() if v not in own),
             "not run here (", " (reduced width)", "(GroupNorm, not the paper's model)", "no full-width run at eps",
             "no precision run at full width", "both sides run at full width", "none (one run at eps",
             labels.interval_long("welch", 1.0), labels.interval_long("paper_spread")]
    return [t.split("{")[0] for t in texts]


def _keys() -> set[str]:
    return {*labels.VERDICTS, *labels.INTERVALS, *labels.STATUSES, *labels.ORIGINS, "compared", "not_run", "one_run",
            "both_run", "no_common_precision"}


def _is_sentence(text: str, sentences: list[str], keys: set[str]) -> bool:
    """``text`` tests for a sentence: it contains one, or (a few words) begins or ends one. One word (a key, a
    field's plain value) is no sentence."""
    words = text.strip()
    if len(words) < 5 or " " not in words or words in keys:
        return False
    return any(s.startswith(words) or s.endswith(words) or (len(s.strip()) >= 5 and s.strip() in text)
               for s in sentences)


def _compared_literals(tree: ast.AST):
    """(line, literal) of every string constant a comparison or a string test reads: ``==``, ``!=``, ``in`` and
    ``not in`` against a constant; ``startswith``, ``endswith``, ``removeprefix``, ``removesuffix``, ``contains``,
    ``match``, ``isin`` called with constants."""
    def consts(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for e in node.elts:
                yield from consts(e)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                for c in consts(operand):
                    yield node.lineno, c
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "startswith", "endswith", "removeprefix", "removesuffix", "contains", "match", "isin", "fullmatch"):
            for arg in node.args:
                for c in consts(arg):
                    yield node.lineno, c


def _sources():
    """(name, python source) of every module of workflow/, the rules' Python (a Snakefile's lines that parse) and
    every notebook's code cells."""
    for path in sorted((REPO / "workflow").rglob("*.py")):
        yield path.relative_to(REPO), path.read_text()
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        magic = ("%", "!")  # IPython's lines: no Python
        yield path.relative_to(REPO), "\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith(magic))


def test_nothing_in_the_workflow_compares_a_field_with_a_generated_sentence():
    sentences, keys = _sentences(), _keys()
    found = []
    for name, source in _sources():
        if name == Path("workflow/report/labels.py"):
            continue
        for line, literal in _compared_literals(ast.parse(source)):
            if _is_sentence(literal, sentences, keys):
                found.append(f"{name}:{line}: {literal!r}")
    for path in sorted((REPO / "rules").glob("*.smk")):  # Snakemake syntax: the comparisons by pattern
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            for m in re.finditer(r"""(?:==|!=|\bin|startswith\(\(?|endswith\(\(?|isin\(\[?)\s*f?(["'])(.*?)\1""",
                                 code):
                if _is_sentence(m[2], sentences, keys):
                    found.append(f"{path.relative_to(REPO)}:{i}: {m[2]!r}")
    assert not found, "a field compared with a sentence (compare its key; labels renders the sentence):\n" + \
        "\n".join(found)


def test_the_old_sentence_tests_are_gone_from_the_workflow():
    """The tests that read sentences back before the fields were keys (issue 60's), by their text: none is left
    outside labels.py."""
    patterns = ['== "run here"', "== 'run here'", '!= "run here"', '.startswith("no full-width run")',
                'startswith("not comparable")', '"not run here (', "'not run here (", 'startswith("undecided")',
                'startswith("Welch")', '== "paper, cited"', 'interval_name(']
    found = []
    for path in sorted((REPO / "workflow").rglob("*.py")):
        if path.name == "labels.py" and path.parent.name == "report":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            found += [f"{path.relative_to(REPO)}:{i}: {p}" for p in patterns
                      if p in line and not (p == '== "paper, cited"' and "printed.label" in line)]
    # paper_accuracy.csv's own label column (an input, never a result) is the one "paper, cited" compared, in objects.py
    assert not found, "\n".join(found)


def test_the_sentence_check_catches_the_old_code():
    """The checks above would have failed on the code before the fields were keys (a few of its lines)."""
    old = '''
here = t[(t.label == "run here") & t.paper.notna()]
here = here[~here.status.str.startswith("not comparable")]
missing = str(r.status).startswith("no full-width run")
if f"within {MARGIN:g} point" in verdict or verdict.startswith(("below", "above")) or verdict == ONE_RUN:
    pass
if text == "paper spread only (n = 1)" or "within 1 point" in v:
    pass
'''
    sentences, keys = _sentences(), _keys()
    flagged = [lit for _, lit in _compared_literals(ast.parse(old)) if _is_sentence(lit, sentences, keys)]
    assert sorted(flagged) == sorted(["run here", "not comparable", "no full-width run", "paper spread only (n = 1)",
                                      "within 1 point"])
    # keys compared are fine
    ok = 'if v == "within" or v in ("below_within", "above_within") or t.origin == "here": pass'
    assert not [lit for _, lit in _compared_literals(ast.parse(ok)) if _is_sentence(lit, sentences, keys)]


def test_an_audited_model_is_named_from_its_typed_fields():
    """The audits' tables carry the model's key and width; the label is made from them (nothing splits a label)."""
    assert labels.audited("inception", 1.0) == "Inception"
    assert labels.audited("inception", 0.25) == "Inception 0.25x"
    assert labels.audited("papernot_cnn", 1) == "tanh CNN"
    assert labels.audited("resnet9", 0.5) == "resnet9 0.5x"  # a key without a label shows as it is
