"""A view drawn in place, and :class:`Live`: the view wired to its ipywidgets controls.

A :class:`View` owns one Figure with a fixed size and fixed axes positions (no layout engine, so a redraw never moves
anything and costs only the drawing); ``update(**setting)`` changes its artists and returns a text readout. :class:`Live`
shows controls, the readout and the figure as one widget; displayed, it also carries the figure as a PNG and the
readout as text, which is what a viewer without the widget (the executed copy, an untrusted notebook) shows instead.
"""

from __future__ import annotations

import base64
import html
import io
import time

from dirdp.explore.options import eps_options
from dirdp.presets import get_preset

DPI = 80


def figure_png(fig) -> bytes:
    """A Figure as PNG bytes at its own size (for IPython.display.Image: shown the same with any matplotlib backend)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def new_figure(size):
    """A Figure on its own Agg canvas: not registered with pyplot, so nothing shows it but the caller."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


class View:
    """Base of the explorer's views: ``fig`` (drawn once by ``_build``), ``update(**setting) -> str``, ``png()``."""

    size = (12.0, 3.2)

    def __init__(self):
        self.fig = new_figure(self.size)
        self.title = self.fig.suptitle("", fontsize=10)
        self._build()

    def png(self) -> bytes:
        return figure_png(self.fig)

    def _rescale(self):
        for ax in self.axes:
            ax.relim()
            ax.autoscale_view()

    @staticmethod
    def _setting(preset, eps, alpha=None) -> str:
        p = get_preset(preset)
        return f"{p.name}: q = {p.q:.4g}, T = {p.steps}, delta = {p.delta:g}; eps = {eps:g}" + (
            "" if alpha is None else f", alpha = {alpha:g}")


class Live:
    """A view wired to its controls: one VBox (controls, a fixed-height readout, the figure as an Image updated in
    place). Changing the preset first moves eps (to a value certifiable there), alpha, d and lr to that preset's
    protocol, then redraws once. ``last_update_s``: the kernel's time for the last redraw."""

    def __init__(self, view: View, **ctrls):
        import ipywidgets as w

        self.view, self.controls, self._hold, self.last_update_s, self.updates = view, ctrls, False, None, 0
        width = round(view.fig.get_size_inches()[0] * view.fig.dpi)
        self.readout = w.HTML(layout=w.Layout(min_height="5.4em"))
        # full size where it fits, scaled down (aspect kept) where the notebook is narrower; never a scrollbar
        self.image = w.Image(format="png", layout=w.Layout(width="100%", max_width=f"{width}px", height="auto",
                                                           margin="2px 0", object_fit="contain"))
        if "preset" in ctrls:  # observers run in the order they were added: the preset's dependants move first
            ctrls["preset"].observe(self._preset_changed, names="value")
        for c in ctrls.values():
            c.observe(self._changed, names="value")
        self.widget = w.VBox([w.Box(list(ctrls.values()), layout=w.Layout(flex_flow="row wrap")), self.readout,
                              self.image])
        self.widget.add_class("dirdp-live")
        self.refresh()

    def _changed(self, _change):
        if not self._hold:
            self.refresh()

    def _preset_changed(self, change):
        p, c = get_preset(change["new"]), self.controls
        self._hold = True
        try:
            if "eps" in c:
                old, offered = c["eps"].value, eps_options(p.name, extra=(c["eps"].value,))
                c["eps"].options = [(f"{o:g}", o) for o in offered]
                c["eps"].value = old if old in offered else offered[0]
            for name, value in (("alpha", p.alpha), ("d", p.num_classes), ("lr", p.lr)):
                if name in c:
                    c[name].value = value
        finally:
            self._hold = False

    def refresh(self):
        """Recompute and redraw: the readout and the image change in place (the same Figure is redrawn)."""
        start = time.perf_counter()
        try:
            self.text = self.view.update(**{k: c.value for k, c in self.controls.items()})
        except Exception as err:  # shown, not lost in the kernel's log: a widget callback has no cell to print to
            self.text = f"update failed: {type(err).__name__}: {err}"
        self.readout.value = f'<pre style="margin:0; white-space:pre-wrap">{html.escape(self.text)}</pre>'
        self.image.value = self.view.png()
        self.updates += 1
        self.last_update_s = time.perf_counter() - start

    def _repr_mimebundle_(self, **kwargs):
        """The widget, with the figure (PNG) and the readout (text) for viewers that cannot show it: a notebook
        renders one type per output, the widget where it can, else the image (never the widget's repr as text)."""
        return {**self.widget._repr_mimebundle_(**kwargs), "text/plain": self.text,
                "image/png": base64.b64encode(self.image.value).decode()}
