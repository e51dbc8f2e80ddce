"""Whether a data set can be downloaded here at all, decided in seconds before a downloader's retries: the data root
can be written and the download's host answers. Re-exported by :mod:`dirdp.data`, which calls it through its own
name (tests patch ``dirdp.data.why_no_download``)."""

from __future__ import annotations

import os
from pathlib import Path


ROOT_RULE = "--data-root, else $DIRDP_DATA, else ./data"


def _root_origin(given) -> str:
    """What chose the data root: the caller's ``root`` (the CLI's --data-root), $DIRDP_DATA or the default."""
    if given:
        return "--data-root"
    return "$DIRDP_DATA" if os.environ.get("DIRDP_DATA") else "the default, ./data"


def _host(url: str) -> tuple[str, int]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


def why_no_download(spec, root: Path, timeout: float = 5.0) -> str | None:
    """Why a download of ``spec`` (a :class:`dirdp.data.DatasetSpec`) into ``root`` cannot work here (None: it may): the root cannot be created or
    written, or the download's host does not answer (no network; checked only where no proxy is set, since a
    proxy may reach what a direct connection cannot). Seconds at most, instead of a downloader's retries."""
    import socket
    import urllib.request

    above = next((p for p in (root, *root.parents) if p.exists()), None)
    if above is None or not above.is_dir() or not os.access(above, os.W_OK | os.X_OK):
        return f"{above} cannot be written" if above is not None else f"{root} cannot be created"
    if not spec.source or urllib.request.getproxies():
        return None
    host, port = _host(spec.source)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as err:
        return f"no network: {host} cannot be reached: {getattr(err, 'strerror', None) or err}"
    return None
