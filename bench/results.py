"""Figures: each one a list of runs, summarised as min/median/max; the table and the JSON."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HIGHER, LOWER = "higher", "lower"


@dataclass
class Figure:
    scenario: str
    metric: str
    system: str
    unit: str
    better: str
    runs: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        if self.runs:
            d |= {"min": min(self.runs), "median": self.median, "max": max(self.runs)}
        return d


class Results:
    def __init__(self) -> None:
        self.figures: dict[tuple[str, str, str], Figure] = {}
        self.order: list[tuple[str, str]] = []
        self.notes: list[str] = []

    def add(self, scenario: str, metric: str, system: str, value: float, unit: str,
            better: str = HIGHER, note: str = "") -> None:
        key = (scenario, metric, system)
        if key not in self.figures:
            self.figures[key] = Figure(scenario, metric, system, unit, better)
            if (scenario, metric) not in self.order:
                self.order.append((scenario, metric))
        fig = self.figures[key]
        fig.runs.append(value)
        if note and note not in fig.note:
            fig.note = (fig.note + "; " + note).strip("; ")

    def table(self, systems: list[str]) -> str:
        cols = [s for s in systems if any(k[2] == s for k in self.figures)]
        peers = [s for s in cols if not s.startswith("brooq")]
        header = ["scenario", "metric", *cols, "brooq vs best peer"]
        rows = [header]
        scenarios = ["enqueue", "drain", "memory", "latency", "ceiling", "grown"]
        order = sorted(self.order, key=lambda k: scenarios.index(k[0]) if k[0] in scenarios else 99)
        ours = "brooq" if "brooq" in cols else "brooq-sql"
        for scenario, metric in order:
            figs = {s: self.figures.get((scenario, metric, s)) for s in cols}
            unit = next(f.unit for f in figs.values() if f)
            better = next(f.better for f in figs.values() if f)
            row = [scenario, f"{metric} [{unit}]"]
            for s in cols:
                f = figs[s]
                row.append(cell(f) if f and f.runs else "")
            row.append(ratio(figs.get(ours), [f for p in peers if (f := figs[p])], better))
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = []
        for n, r in enumerate(rows):
            lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(r, widths))).rstrip())
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def write_json(self, path: Path, meta: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"meta": meta, "notes": self.notes,
                "figures": [self.figures[k].summary() for k in self.figures]}
        path.write_text(json.dumps(data, indent=2, default=str) + "\n")


def fmt(v: float) -> str:
    a = abs(v)
    if a >= 100_000:
        return f"{v / 1000:,.0f}k"
    if a >= 10_000:
        return f"{v / 1000:.1f}k"
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def cell(f: Figure) -> str:
    text = fmt(f.median)
    if len(f.runs) > 1:
        text += f" ({fmt(min(f.runs))}–{fmt(max(f.runs))})"
    return text + ("*" if f.note else "")


def ratio(brooq: Figure | None, peers: list[Figure], better: str) -> str:
    """How many times better brooq's median is than the best peer's (> 1: brooq wins)."""
    peers = [p for p in peers if p.runs]
    if not brooq or not brooq.runs or not peers:
        return ""
    if better == HIGHER:
        best = max(peers, key=lambda p: p.median)
        r = brooq.median / best.median if best.median else float("inf")
    else:
        best = min(peers, key=lambda p: p.median)
        r = best.median / brooq.median if brooq.median > 0 else float("inf")
    return f"{r:.2f}× vs {best.system}"
