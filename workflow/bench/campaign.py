"""The GPU campaign's benchmark (``python -m workflow bench --campaign``): :func:`campaign_bench` adds DP-SGD
(Opacus, on the GroupNorm twin), precisions (fp32, bf16 autocast with channels_last) and peak CUDA memory to
:mod:`workflow.bench.core`'s timing; :func:`campaign_main` measures model by model, projects and prints."""

from __future__ import annotations

import torch

from workflow.bench.core import ALG1, DPSGD, NONPRIVATE, _dpsgd_step, _interleaved, _losses, _peak_memory, _setup, _step
from workflow.bench.projection import _hours, print_campaign_bench, project

# precision -> (bf16 autocast, channels_last for model and input)
PRECISIONS = {"fp32": (False, False), "fp32+cl": (False, True), "bf16": (True, False), "bf16+cl": (True, True)}


def _campaign_dpsgd(name: str, width: float, dev: torch.device, bf16: bool, channels_last: bool,
                    batch: int | None = None):
    """DP-SGD's timed step on the Opacus-compatible (GroupNorm) model, after one untimed step: raises
    if Opacus is missing or cannot run this model at this precision."""
    _, net, x, y, g = _setup(name, width, dev, opacus_compatible=True, batch=batch, channels_last=channels_last)
    step = _dpsgd_step(net, x, y, g, dev, bf16)
    step()
    return step


def _opacus_missing() -> str | None:
    """Why Opacus cannot be imported here, or None if it can."""
    try:
        import opacus  # noqa: F401 - only whether it imports
    except ImportError as e:
        return f"opacus not importable: {type(e).__name__}: {e}"
    return None


def _campaign_row(name: str, width: float, dev: torch.device, precision: str, *, reps: int, warmup: int,
                  dpsgd: bool | str, r: float, alpha: float, batch: int | None = None) -> dict:
    """One row of :func:`campaign_bench`; ``dpsgd`` is True, False or why DP-SGD cannot run."""
    bf16, channels_last = PRECISIONS[precision]
    preset, model, x, y, g = _setup(name, width, dev, batch=batch, channels_last=channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    losses = _losses(g, r, alpha)
    steps = {k: _step(model, opt, x, y, losses[k], dev, bf16) for k in (NONPRIVATE, ALG1)}
    note = dpsgd if isinstance(dpsgd, str) else None if dpsgd else "not asked (dpsgd=False)"
    if dpsgd is True:
        try:
            steps[DPSGD] = _campaign_dpsgd(name, width, dev, bf16, channels_last, batch)
        except Exception as e:  # noqa: BLE001 - Opacus cannot run this model at this precision: the row goes on
            note = f"Opacus failed at {precision}: {type(e).__name__}: {e}"[:400]
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    med, peak = _interleaved(steps, reps, warmup), _peak_memory(steps, dev)
    t_dp = med.get(DPSGD)
    return dict(model=name, width=width, batch=int(x.shape[0]), precision=precision, device=str(dev),
                device_name=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                threads=torch.get_num_threads(), torch=torch.__version__, reps=reps,
                nonprivate_s=med[NONPRIVATE], algorithm1_s=med[ALG1], dpsgd_s=t_dp, dpsgd_note=note,
                dpsgd_model="GroupNorm (Opacus-compatible)" if name != "papernot_cnn" else "as published (no norm)",
                peak_mem_gib={NONPRIVATE: peak[NONPRIVATE], "algorithm1": peak[ALG1], DPSGD: peak.get(DPSGD)},
                dpsgd_over_algorithm1=None if t_dp is None else t_dp / med[ALG1],
                algorithm1_over_nonprivate=med[ALG1] / med[NONPRIVATE])


def campaign_bench(models=("inception", "resnet18"), *, device: str = "cuda", width: float = 1.0, reps: int = 10,
                   precisions=("fp32", "bf16+cl"), dpsgd: bool = True, warmup: int = 2, r: float = 0.2349,
                   alpha: float = 3.0, batch: int | None = None) -> list[dict]:
    """One row per model and precision (a key of :data:`PRECISIONS`: "fp32" = float32, contiguous;
    "bf16+cl" = bf16 autocast, channels_last model and input): median seconds per step of non-private
    SGD and Algorithm 1 on the paper's (BatchNorm) model, and of DP-SGD (Opacus) on its GroupNorm
    twin, timed interleaved on the paper's batch for the model's data set (Section 4.1), with each
    method's peak CUDA memory (GiB; None off CUDA). ``dpsgd_s`` is None, with the reason in
    ``dpsgd_note``, when Opacus is missing or fails at that precision. ``papernot_cnn`` (the
    tempered-sigmoid CNN, MNIST's shape) is always benchmarked at width 1, as it is trained."""
    dev = torch.device(device)
    unknown = [p for p in precisions if p not in PRECISIONS]
    if unknown:
        raise ValueError(f"unknown precision(s) {unknown}. Known: {', '.join(PRECISIONS)}.")
    if dpsgd:
        dpsgd = _opacus_missing() or True
    rows = []
    for name in models:
        for precision in precisions:
            rows.append(_campaign_row(name, 1.0 if name == "papernot_cnn" else width, dev, precision, reps=reps,
                                      warmup=warmup, dpsgd=dpsgd, r=r, alpha=alpha, batch=batch))
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    return rows


def campaign_main(models=("inception", "resnet18", "resnet9", "papernot_cnn"), *, width: float = 1.0, reps: int = 10,
                  device: str = "cuda", json_out: str | None = None, precisions=("fp32", "bf16+cl"),
                  batch: int | None = None) -> int:
    """``python -m workflow bench --campaign``: :func:`campaign_bench` model by model (each written to
    ``json_out`` as soon as it is measured, so a cut-off run keeps what it had), then the projections for the
    paper profile (fp32 and bf16 + channels_last) and the gpu profile (fp32)."""
    import json
    from pathlib import Path

    from dirdp.provenance import jsonable

    rows: list[dict] = []
    record: dict = dict(device=device, width=width, reps=reps, rows=rows, projection=None, projections=[])

    def save():
        if json_out:
            Path(json_out).write_text(json.dumps(jsonable(record), indent=1, default=str) + "\n")

    for name in models:
        rows += campaign_bench((name,), device=device, width=width, reps=reps, precisions=precisions, batch=batch)
        save()
    config = Path(__file__).resolve().parents[2] / "config"
    for profile, precision in (("paper", precisions[0]), ("paper", precisions[-1]), ("gpu", precisions[0])):
        record["projections"].append(project(rows, config / f"{profile}.yaml", precision=precision))
    record["projection"] = record["projections"][0]
    save()
    print_campaign_bench(rows, record["projection"])
    for p in record["projections"][1:]:
        print(f"\nprofile '{p['profile']}' at {p['precision']}: {p['n_projected']} of {p['n_runs']} runs, serially "
              f"{_hours(p['profile_serial_s'])}; one Table-1 cell {_hours(p['table1_cell_s'])}")
    return 0
