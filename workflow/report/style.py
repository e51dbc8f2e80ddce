"""The one style of every figure: Okabe and Ito's colour-blind-safe palette with vermillion kept for "violates its
claim", text of at least 12 pt at the size a figure is shown (a page about 9 inches wide), and no saved figure over
:data:`MAX_PIXELS` a side (:func:`save`)."""

from __future__ import annotations

from pathlib import Path

# Okabe and Ito (2008), "Color Universal Design": distinguishable under every common colour-vision deficiency
BLACK, ORANGE, SKY, GREEN, YELLOW, BLUE, VERMILLION, PURPLE = (
    "#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
GREY = "#8C8C8C"
VIOLATES = VERMILLION  # a bound above its claim, and nothing else
PALETTE = [BLUE, ORANGE, GREEN, SKY, PURPLE, BLACK, GREY]  # every other series, in this order (no vermillion)
FONT = 12  # points, at the size shown
MAX_PIXELS = 2000  # the longest side of a saved PNG
DPI = 200  # a PNG's resolution where its size allows


def use() -> None:
    """Set the style for every figure drawn after it (matplotlib's rcParams)."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update({
        "font.size": FONT, "axes.titlesize": FONT + 1, "axes.labelsize": FONT, "xtick.labelsize": FONT - 1,
        "ytick.labelsize": FONT - 1, "legend.fontsize": FONT - 1, "figure.titlesize": FONT + 2,
        "axes.prop_cycle": cycler(color=PALETTE), "axes.spines.top": False, "axes.spines.right": False,
        "axes.grid": True, "grid.color": "#E6E6E6", "grid.linewidth": 0.8, "axes.axisbelow": True,
        "savefig.bbox": "tight", "figure.dpi": 100})


def dpi_for(fig) -> float:
    """The resolution that keeps ``fig``'s longest side as saved (its tight bounding box: labels outside the axes
    included) at most :data:`MAX_PIXELS` (and at most :data:`DPI`)."""
    fig.canvas.draw()
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    return min(DPI, 0.98 * MAX_PIXELS / max(box.width + 0.2, box.height + 0.2))  # savefig's pad: 0.1 in a side


def save(fig, folder: str | Path, stem: str, *, pdf: bool = True) -> Path:
    """``fig`` as ``<folder>/<stem>.png`` (:func:`dpi_for`, lowered again should the saved image still exceed
    :data:`MAX_PIXELS`: a tight bounding box moves with the resolution) and, with ``pdf``, as ``.pdf``; returns the
    PNG's path."""
    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    png = folder / f"{stem}.png"
    dpi = dpi_for(fig)
    for _ in range(3):
        fig.savefig(png, dpi=dpi)
        with Image.open(png) as im:
            side = max(im.size)
        if side <= MAX_PIXELS:
            break
        dpi *= 0.99 * MAX_PIXELS / side
    if pdf:
        fig.savefig(folder / f"{stem}.pdf")
    return png
