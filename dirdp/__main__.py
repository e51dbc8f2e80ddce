"""Command line: ``python -m dirdp rstar|epsilon ...`` (see ``--help``)."""

from __future__ import annotations

import argparse
import json
import sys

from dirdp import accountant
from dirdp.presets import PRESETS, get_preset


def _protocol(args) -> dict:
    """(alpha, q, steps, delta) from --preset, each overridable by its own flag."""
    base = get_preset(args.preset) if args.preset else None
    out = {}
    for key, default in (("alpha", None), ("q", None), ("steps", None), ("delta", 1e-5)):
        value = getattr(args, key)
        if value is None and base is not None:
            value = getattr(base, key)
        if value is None:
            value = default
        if value is None:
            raise SystemExit(f"error: give --preset or --{key} (presets: {', '.join(PRESETS)}).")
        out[key] = value
    return out


def _add_protocol_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=sorted(PRESETS), help="protocol of Section 4.1.2 (q, T, alpha=3, delta=1e-5)")
    p.add_argument("--alpha", type=float, help="Dirichlet offset alpha (preset: 3)")
    p.add_argument("--q", type=float, help="Poisson sampling rate q")
    p.add_argument("--steps", type=int, help="number of training steps T")
    p.add_argument("--delta", type=float, help="DP delta (default 1e-5)")
    p.add_argument("--max-order", type=int, default=accountant.DEFAULT_MAX_ORDER, help="largest RDP order searched")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dirdp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_r = sub.add_parser("rstar", help="r* of Eq. (1) for a target epsilon")
    p_r.add_argument("--eps", type=float, required=True, help="target epsilon")
    _add_protocol_flags(p_r)
    p_e = sub.add_parser("epsilon", help="epsilon certified by Theorem 10 for a given r")
    p_e.add_argument("--r", type=float, required=True, help="Dirichlet scale r in (0, alpha)")
    _add_protocol_flags(p_e)
    args = parser.parse_args(argv)

    proto = _protocol(args)
    record = dict(preset=args.preset, **proto, max_order=args.max_order)
    try:
        if args.command == "rstar":
            r = accountant.rstar(eps=args.eps, max_order=args.max_order, **proto)
            spend = accountant.epsilon(r=r, max_order=args.max_order, **proto)
            record.update(eps=args.eps, rstar=r, certified_epsilon=spend.epsilon, order=spend.order)
            text = (f"r* = {r:.6f}  (target eps={args.eps:g}; Theorem 10 certifies eps={spend.epsilon:.6f} "
                    f"at order lambda={spend.order})")
        else:
            spend = accountant.epsilon(r=args.r, max_order=args.max_order, **proto)
            record.update(r=args.r, epsilon=spend.epsilon, order=spend.order)
            text = f"epsilon = {spend.epsilon:.6f} at order lambda={spend.order}  (r={args.r:g}, delta={proto['delta']:g})"
    except ValueError as err:
        if args.json:
            print(json.dumps(dict(record, error=str(err))))
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(record))
    else:
        print(text)
        print(f"  alpha={proto['alpha']:g}  q={proto['q']:.6g}  T={proto['steps']}  delta={proto['delta']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
