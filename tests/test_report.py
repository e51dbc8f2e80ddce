"""`snakemake --report`: the self-contained HTML report of a profile builds from the files on disk, as a fresh clone
has them (no .snakemake/ records, no data, nothing trained or run), and holds every table, figure, executed notebook
and the index that the profile has made, each with its caption and in its category; an output not on disk is left
out instead of stopping the report. `snakemake --lint` reports nothing but the one lint rules/train.smk documents."""

import hashlib
import json
import re

import pytest
from test_dag import COMMITTED_PROFILE, REPO, copy_workflow, profile_outputs, snakemake

from dirdp.provenance import read_csv
from workflow import paper
from workflow.experiments import OBJECTS

P = COMMITTED_PROFILE  # the profile whose results are committed


def report_data(html: str) -> tuple[dict, dict]:
    """The report's results (path -> name, labels, caption, ...) and categories (category -> subcategory -> paths),
    as the report's page declares them (`var results = {...};`, `var categories = {...};`)."""

    def var(name):
        return json.loads(re.search(r"^\s*var " + name + r" = (\{.*\});\s*$", html, flags=re.M).group(1))

    return var("results"), var("categories")


@pytest.fixture(scope="module")
def committed_report(tmp_path_factory):
    """The committed profile's report, built in a copy of the workflow and its committed outputs (the repository is
    left alone) with no data root: returns the copy, the report's HTML and the snakemake process."""
    work = copy_workflow(tmp_path_factory.mktemp("report"), outputs=True)
    assert not (work / ".snakemake").exists()  # as a fresh clone: no run times, no records
    (work / f"figures/{P}/width_effect.png").unlink()  # an output not on disk: left out, not an error
    before = profile_outputs(work, P)
    runs = sorted(p.name for p in (work / "results/runs").rglob("*.json"))
    proc = snakemake("--report", f"results/{P}/report.html", "--configfile", f"config/{P}.yaml", cwd=work,
                     data=work / "no-data")
    html = (work / f"results/{P}/report.html").read_text()
    (work / f"results/{P}/report.html").unlink()
    assert profile_outputs(work, P) == before  # nothing was run: every output as it was
    assert sorted(p.name for p in (work / "results/runs").rglob("*.json")) == runs  # nothing was trained
    print(f"report: {len(html.encode())} bytes")
    return work, html, proc


@pytest.mark.slow
def test_the_report_holds_every_table_figure_notebook_and_the_index_on_disk(committed_report):
    work, html, proc = committed_report
    results, categories = report_data(html)
    on_disk = {str(p.relative_to(work)) for pattern in (f"results/{P}/*.csv", f"figures/{P}/*.png",
                                                        f"results/{P}/notebooks/*.ipynb", f"results/{P}/README.md")
               for p in work.glob(pattern)}
    assert set(results) == on_disk  # each, and only what is there (width_effect.png was removed)
    assert f"figures/{P}/width_effect.png" not in results and f"results/{P}/width_effect.csv" in results
    assert sorted(p for subcats in categories.values() for paths in subcats.values() for p in paths) == sorted(results)
    assert sorted(categories) == ["1. Accuracy: the paper's tables and figures (Section 4, appendices)",
                                  "2. Privacy accounting and theory", "3. Beyond the paper: baselines, width, every run",
                                  "4. Privacy audit", "5. Index"]
    for path, entry in results.items():
        assert entry["caption"].strip() and "{{" not in entry["caption"], path  # rendered, with the profile's name
        assert entry["labels"]["file"] == path.rsplit("/", 1)[1]
    assert "Missing metadata" in proc.stderr and "Could not detect mimetype" not in proc.stderr  # no records: no times
    assert "it trains and runs nothing" in html  # the front page (report/workflow.rst)


def test_every_paper_object_is_in_the_report_with_its_caption_and_data_set(committed_report):
    _, html, _ = committed_report
    results, categories = report_data(html)
    accuracy = categories["1. Accuracy: the paper's tables and figures (Section 4, appendices)"]
    for name, obj in OBJECTS.items():
        stem = obj.figures[0] if obj.figures else name
        # its figure where it has one: a value the paper prints, or a run here (Figure 2 here has neither)
        t, _ = read_csv(REPO / f"results/{P}/{name}.csv")
        drawn = len(paper.accuracy(obj.paper_object or name)) > 0 or (t.origin == "here").any()
        files = [f"results/{P}/{name}.csv", *([f"figures/{P}/{stem}.png"] if drawn else []),
                 f"results/{P}/notebooks/{name}.ipynb"]
        assert drawn or f"figures/{P}/{stem}.png" not in results
        for path in files:
            assert path in results, path
            assert f"{obj.title} of the paper" in results[path]["caption"]
            assert results[path]["labels"]["about"] == obj.title
        subcategory = {"cifar10": "CIFAR10", "mnist": "MNIST", "fashionmnist": "FashionMNIST", "svhn": "SVHN",
                       "dermamnist": "DermaMNIST"}[obj.dataset]
        assert set(files) <= set(accuracy[subcategory])
    assert "Table 4 of the paper" in results[f"figures/{P}/fig3a_fashionmnist.png"]["caption"]
    assert "Tables 6 and 7 of the paper" in results[f"figures/{P}/h_of_r.png"]["caption"]
    assert "Theorem 11 of the paper" in results[f"results/{P}/theorem11_mc.csv"]["caption"]


def test_every_caption_file_is_used():
    captions = {p.stem for p in (REPO / "report/captions").glob("*.rst")}
    rules = {"table6_table7_rstar", "theorem11_kappa_variance", "explore_kappa", "baselines_comparison",
             "width_effect", "runs_summary", "audit_privacy", "audit_reconstruction", "audit_figures",
             "audit_released_models", "audit_subspace",
             "audit_batchnorm", "audit_paper_model", "audit_one_run", "precision_validation", "dpsgd_step_cost", "headline",
                "index"}
    assert captions == set(OBJECTS) | rules
    text = "\n".join(p.read_text() for p in sorted((REPO / "rules").glob("*.smk")))
    for name in captions - set(OBJECTS):  # a notebook job (its caption is its name) or the index
        assert f'    "{name}": Notebook(' in text or f'"{name}",' in text, f"report/captions/{name}.rst: no rule uses it"


def test_every_object_caption_names_the_notebook_that_makes_it():
    """The executed copy (results/<profile>/notebooks/<object>.ipynb), the notebook it was run from (the one of every
    object) and the object it was run for."""
    from workflow.report import OBJECT_NOTEBOOK

    for name in OBJECTS:
        text = " ".join((REPO / f"report/captions/{name}.rst").read_text().split())
        assert f"``notebooks/{name}.ipynb``" in text, name
        assert f"``notebooks/{OBJECT_NOTEBOOK}.ipynb``" in text and f'``object_name = "{name}"``' in text, name


def lints(output: str) -> set[tuple[str, str]]:
    """(what, title) of every lint that `snakemake --lint` printed: what is "rule NAME" or "snakefile PATH"
    (`--lint json` prints the text all the same in Snakemake 9.27)."""
    found = set()
    for block in output.split("Lints for ")[1:]:
        what = re.match(r"(rule \w+|snakefile \S+)", block).group(1)
        found |= {(what, title) for title in re.findall(r"^    \* (.*):$", block, flags=re.M)}
    return found


@pytest.mark.slow
def test_lint_reports_only_the_documented_exception():
    proc = snakemake("--lint", "--configfile", "config/smoke.yaml", check=False)
    # rules/train.smk's docstring says why its command names {PY}: its text is the rule's code record
    assert lints(proc.stdout + proc.stderr) == {("rule train", "Shell command directly uses variable PY from outside "
                                                                "of the rule")}, proc.stderr
    train = (REPO / "rules/train.smk").read_text()
    assert "{PY} -m dirdp train" in train and "tests/test_report.py allows exactly this lint" in train


def test_report_outputs_are_gitignored():
    ignore = (REPO / ".gitignore").read_text()
    assert "results/*/report.html" in ignore and "results/report.html" in ignore


def test_an_object_table_never_pools_precisions(tmp_path):
    # the committed fp32 MNIST eps = 1 seeds beside bf16 copies of two of them: two rows, each with its own n
    import json
    import shutil

    from workflow.experiments import Profile, get_object
    from workflow.report import object_table

    repo = REPO
    runs = tmp_path / "runs" / "cpu" / "mnist"
    runs.mkdir(parents=True)
    for seed in (0, 1, 2):
        shutil.copy(repo / f"results/runs/cpu/mnist/alg1_eps1_seed{seed}.json", runs)
    for seed in (0, 1):
        rec = json.loads((runs / f"alg1_eps1_seed{seed}.json").read_text())
        rec.update(precision="bf16", test_accuracy=rec["test_accuracy"] - 1)
        (runs / f"alg1_bf16_eps1_seed{seed}.json").write_text(json.dumps(rec))
    t = object_table(get_object("table2_mnist"), Profile.load(repo / "config/cpu.yaml"), runs_root=str(tmp_path / "runs"))
    cell = t[(t.method == "Algorithm 1") & (t.eps == 1) & (t.origin == "here") & (t.norm == "batch")]
    assert sorted(zip(cell.precision, cell.n)) == [("bf16", 2), ("fp32", 3)]
    assert cell[cell.precision == "bf16"].setting.iloc[0].endswith(", bf16")


def test_a_cells_spread_is_rounded_once_where_it_is_printed(tmp_path):
    # two seeds 0.87 apart: std 0.6152, so "± 0.62" on every page; a table that kept 0.615 printed "± 0.61" on one
    import json
    import shutil

    from workflow.experiments import Profile, get_object
    from workflow.report import object_table
    from workflow.report.readme_campaign import acc

    runs = tmp_path / "runs" / "cpu" / "fashionmnist"
    runs.mkdir(parents=True)
    for seed, accuracy in ((0, 90.0), (1, 90.87)):
        name = f"alg1_w1_bf16_eps2_seed{seed}.json"
        shutil.copy(REPO / "results/runs/cpu/fashionmnist" / name, runs)
        rec = json.loads((runs / name).read_text())
        (runs / name).write_text(json.dumps(dict(rec, test_accuracy=accuracy)))
    t = object_table(get_object("table4_fashionmnist"), Profile.load(REPO / "config/cpu.yaml"),
                     runs_root=str(tmp_path / "runs"))
    cell = t[(t.origin == "here") & (t.width == 1.0)].iloc[0]
    assert cell["std"] == pytest.approx(0.87 / 2 ** 0.5, abs=1e-9) and cell.n == 2
    assert acc(cell["mean"], cell["std"], 2).endswith(" ± 0.62 (n = 2)")


def test_a_figures_subtitle_names_only_what_all_its_runs_share():
    """One setting: named whole. Several (the full-width campaign beside the 0.25x runs): what they share, and that
    the legend tells the lines apart, never the first setting alone (it once read "full width, bf16" over a figure
    whose runs were mostly at 0.25x)."""
    import pandas as pd

    from workflow.report import runs_note

    def table(*rows):  # an object table's rows: (origin, protocol, setting)
        return pd.DataFrame(rows, columns=["origin", "protocol", "setting"])

    full, quarter = "paper protocol, full width, bf16", "paper protocol, reduced width (0.25x channels)"
    assert runs_note("cpu", table(("here", "paper protocol", full), ("paper", None, None))) == f"runs: profile 'cpu', {full}"
    both = runs_note("cpu", table(*[("here", "paper protocol", s) for s in (full, quarter, quarter)]))
    assert both == "runs: profile 'cpu', paper protocol; one line per setting (legend)"
    assert "full width" not in both and "0.25x" not in both
    assert runs_note("cpu", table(("here", "a", "a, b"), ("here", "c", "c, b"))) == \
        "runs: profile 'cpu', one line per setting (legend)"
    assert runs_note("quick", table()) == runs_note("quick", table(("not_run", None, None))) == "runs: profile 'quick'"


def test_a_paper_only_figure_says_so_and_a_figure_with_nothing_to_draw_is_not_made():
    """Where nothing ran here the figure's title says it shows the paper's values and why none ran; Figure 2 (no
    value printed) with no run has no figure at all; on the eps axis no line joins the non-private value to the
    private ones (the paper's dashed line and ours)."""
    import math

    from dirdp import provenance
    from workflow.experiments import get_object
    from workflow.report import figure

    t, _ = provenance.read_csv(REPO / "results/cpu/table1_cifar10.csv")
    assert not (t.origin == "here").any()
    fig = figure(get_object("table1_cifar10"), t, title_note="runs: profile 'cpu'")
    title = fig.axes[0].get_title(loc="left")
    assert "the paper's values (no run here: " in title and "runs: profile" not in title
    empty, _ = provenance.read_csv(REPO / "results/cpu/fig2_learning_rate_vs_alpha.csv")
    assert figure(get_object("fig2_learning_rate_vs_alpha"), empty) is None
    t, _ = provenance.read_csv(REPO / "results/cpu/table4_fashionmnist.csv")
    ax = figure(get_object("table4_fashionmnist"), t).axes[0]
    inf_x = max(ax.get_xticks())
    for line in ax.get_lines():
        x = [v for v in line.get_xdata() if not (isinstance(v, float) and math.isnan(v))]
        if len(x) > 1 and line.get_linestyle() not in ("None", ""):
            assert inf_x not in x or len(set(x)) == 1, line.get_label()  # a joined series stays private


def test_every_figure_of_the_style_fits_2000_pixels(tmp_path):
    import matplotlib.pyplot as plt
    from PIL import Image

    from workflow.report import style

    style.use()
    fig, ax = plt.subplots(figsize=(16, 9))
    ax.set_yticks([0, 1], ["a long label " * 8, "b"])
    png = style.save(fig, tmp_path, "wide")
    assert max(Image.open(png).size) <= style.MAX_PIXELS and (tmp_path / "wide.pdf").exists()


def test_no_committed_figure_is_over_2000_pixels_a_side():
    from PIL import Image

    from workflow.report import style

    over = {p.name for p in (REPO / f"figures/{P}").glob("*.png") if max(Image.open(p).size) > style.MAX_PIXELS}
    assert not over, over
