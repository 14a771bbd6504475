"""The tables: medians per system and workload, the ratios the JIT issue sets targets
for, footnotes for every cell that could not be filled.  Plain text or Markdown.

`Results` holds what the workers reported; `render` turns it into text.  A cell is
"n/a[k]" where footnote k gives the reason (system not installed, API not there yet,
error, crash, over budget, or a gradient that failed the cross-check).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from bench.latency import LABELS, medians
from bench.timing import format_ns


@dataclass(frozen=True)
class Column:
    """A time column: `field` is "median" (steady-state per call) or "compile" (first
    call minus the median: compilation and other one-time work)."""

    header: str
    system: str
    kind: str
    field: str = "median"


@dataclass(frozen=True)
class Ratio:
    """num / den of two time columns; `target` is (op, bound) from the issue, checked
    only on loop workloads when `loops_only`."""

    header: str
    num: Column
    den: Column
    target: tuple | None = None
    loops_only: bool = False
    issue: int = 4
    goal: float | None = None


ZY_PRIMAL = Column("zy primal", "zygopy", "primal")
ZY_GRAD = Column("zy grad", "zygopy", "grad")
ZY_COMPILE = Column("zy grad 1st", "zygopy", "grad", "compile")
NUMBA = Column("Numba", "numba", "primal")
NUMBA_COMPILE = Column("Numba 1st", "numba", "primal", "compile")
JAX_EAGER = Column("JAX eager", "jax-eager", "grad")
JAX_JIT = Column("JAX jit", "jax-jit", "grad")
AUTOGRAD = Column("autograd", "autograd", "grad")
TORCH = Column("PyTorch", "torch", "grad")
C_ADJOINT = Column("C adjoint", "c-adjoint", "grad")

CPYTHON = Column("CPython", "cpython", "primal")

TIME_COLUMNS = (
    CPYTHON, ZY_PRIMAL, ZY_GRAD, ZY_COMPILE,
    Column("zy interp", "zygopy-interp", "grad"), C_ADJOINT, NUMBA, NUMBA_COMPILE, JAX_EAGER,
    JAX_JIT, Column("JAX jit 1st", "jax-jit", "grad", "compile"), AUTOGRAD, TORCH,
)

RATIOS = (
    Ratio("zy/Numba", ZY_PRIMAL, NUMBA, ("<=", 1.5)),
    Ratio("zy grad/zy", ZY_GRAD, ZY_PRIMAL, ("<=", 3.0)),
    Ratio("zy grad/C adj", ZY_GRAD, C_ADJOINT, ("<=", 2.0), issue=13, goal=1.5),
    Ratio("JAX eager/zy grad", JAX_EAGER, ZY_GRAD, (">=", 100.0), loops_only=True),
    Ratio("autograd/zy grad", AUTOGRAD, ZY_GRAD, (">=", 100.0), loops_only=True),
    Ratio("PyTorch/zy grad", TORCH, ZY_GRAD, (">=", 100.0), loops_only=True),
    Ratio("zy grad/JAX jit", ZY_GRAD, JAX_JIT, ("<=", 1.0)),
    Ratio("zy 1st/Numba 1st", ZY_COMPILE, NUMBA_COMPILE, ("<=", 1.0)),
)

# Ratios a suite may add after the main ones by naming them in its `EXTRA_RATIOS`.
EXTRA_RATIOS = {
    "zy/CPython": Ratio("zy/CPython", ZY_PRIMAL, CPYTHON),
}


@dataclass
class Results:
    """What the runner collected: `cells[(system, workload, kind)]` is a worker's result
    record; `down[system]` the reason a whole system could not run; `bad[(system,
    workload)]` a failed cross-check."""

    systems: list
    workloads: list
    cells: dict = field(default_factory=dict)
    down: dict = field(default_factory=dict)
    bad: dict = field(default_factory=dict)

    def lookup(self, col: Column, workload: str) -> tuple:
        """(nanoseconds, None) or (None, the reason there is no number)."""
        if col.system in self.down:
            return None, f"{col.system}: {self.down[col.system]}"
        rec = self.cells.get((col.system, workload, col.kind))
        if rec is None:
            return None, f"{col.system}: no result reported"
        if not rec.get("ok"):
            return None, f"{col.system} {col.kind}: {rec.get('error', 'failed')}"
        if (col.system, workload) in self.bad:
            return None, f"{col.system}: {self.bad[(col.system, workload)]}"
        if col.field == "compile":
            return max(rec["first_ns"] - rec["median_ns"], 0.0), None
        return rec["median_ns"], None

    def note(self, col: Column, workload: str) -> str:
        """The note a system attached to a cell it filled (e.g. "ran in the
        interpreter"), or ""."""
        rec = self.cells.get((col.system, workload, col.kind))
        return rec.get("note", "") if rec and rec.get("ok") else ""


class Footnotes:
    """Numbers reasons in order of first use; the same reason gets the same number."""

    def __init__(self) -> None:
        self.reasons: list = []

    def mark(self, reason: str) -> str:
        return "n/a" + self.ref(reason)

    def ref(self, reason: str) -> str:
        """"[k]" for `reason`, after a number that comes with a note."""
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"[{self.reasons.index(reason) + 1}]"

    def refs(self, reasons) -> str:
        return "".join(self.ref(r) for r in dict.fromkeys(reasons) if r)

    def lines(self) -> list:
        return [f"[{i}] {r}" for i, r in enumerate(self.reasons, 1)]


def time_rows(res: Results, notes: Footnotes) -> tuple:
    cols = [c for c in TIME_COLUMNS if c.system in res.systems]
    rows = []
    for w in res.workloads:
        row = [w]
        for c in cols:
            ns, why = res.lookup(c, w)
            row.append(format_ns(ns) + notes.refs([res.note(c, w)]) if why is None
                       else notes.mark(why))
        rows.append(row)
    return ["workload"] + [c.header for c in cols], rows


def ratio_rows(res: Results, notes: Footnotes, loops: dict, extra: tuple = ()) -> tuple:
    chosen = RATIOS + tuple(EXTRA_RATIOS[name] for name in extra)
    ratios = [r for r in chosen if r.num.system in res.systems and r.den.system in res.systems]
    rows = []
    for w in res.workloads:
        rows.append([w] + [_ratio_cell(res, r, w, loops[w], notes) for r in ratios])
    return ["workload"] + [r.header for r in ratios], rows, ratios


def _ratio_cell(res: Results, r: Ratio, w: str, loop: bool, notes: Footnotes) -> str:
    num, why = res.lookup(r.num, w)
    den, why2 = res.lookup(r.den, w)
    if why or why2:
        return notes.mark(why or why2)
    if den <= 0:
        return notes.mark(f"{r.den.header} measured as 0")
    value = num / den
    text = format_ratio(value)
    applies = r.target is not None and (loop or not r.loops_only)
    text += "!" if applies and not meets(value, r.target) else ""
    return text + notes.refs([res.note(r.num, w), res.note(r.den, w)])


def meets(value: float, target: tuple) -> bool:
    op, bound = target
    return value <= bound if op == "<=" else value >= bound


def format_ratio(x: float) -> str:
    if x >= 1000:
        return f"{x:,.0f}x"
    if x >= 10:
        return f"{x:.1f}x"
    return f"{x:.2f}x" if x >= 0.01 else f"{x:.1e}x"


def target_legend(ratios: list) -> str:
    """"Targets (issue 4), '!' marks a miss: ...", then one sentence per later issue."""
    by_issue: dict = {}
    for r in ratios:
        if r.target:
            scope = " on loop workloads" if r.loops_only else ""
            goal = f" (goal {r.goal:g})" if r.goal is not None else ""
            by_issue.setdefault(r.issue, []).append(
                f"{r.header} {r.target[0]} {r.target[1]:g}{scope}{goal}")
    issues = sorted(by_issue)
    if not issues:
        return ""
    first, rest = issues[0], issues[1:]
    text = f"Targets (issue {first}), '!' marks a miss: " + "; ".join(by_issue[first]) + "."
    return " ".join([text] + [f"Issue {i}: " + "; ".join(by_issue[i]) + "." for i in rest])


def format_table(header: list, rows: list, markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |",
                 "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    def line(cells):
        first = str(cells[0]).ljust(widths[0])
        rest = [str(c).rjust(wd) for c, wd in zip(cells[1:], widths[1:])]
        return "  ".join([first] + rest).rstrip()
    return "\n".join([line(header), line(["-" * wd for wd in widths])] + [line(r) for r in rows])


def render(res: Results, loops: dict, markdown: bool = False, extra: tuple = ()) -> str:
    """Both tables and their footnotes; `extra` names ratios of `EXTRA_RATIOS` to add."""
    notes = Footnotes()
    th, trows = time_rows(res, notes)
    rh, rrows, ratios = ratio_rows(res, notes, loops, extra)
    title = ("Median time per call (gradient columns: value and every gradient; "
             "'1st': first call minus median, i.e. compilation)")
    out = [title, "", format_table(th, trows, markdown)]
    if ratios:
        out += ["", "Ratios of the medians above", "", format_table(rh, rrows, markdown),
                "", target_legend(ratios)]
    if notes.reasons:
        out += [""] + [_note(line, markdown) for line in notes.lines()]
    return "\n".join(out)


def _note(line: str, markdown: bool) -> str:
    return line.replace("|", "/") + ("  " if markdown else "")


def results_from(payload: dict) -> Results:
    """Rebuild the cells of a run from its payload (live or read back from --json)."""
    res = Results(systems=payload["systems"], workloads=payload["workloads"])
    for rec in payload["records"]:
        if rec.get("suite") == "bench.overhead":
            continue
        if rec["event"] == "unavailable":
            res.down[rec["system"]] = rec["reason"]
        elif rec["event"] == "result":
            res.cells[(rec["system"], rec["workload"], rec["kind"])] = rec
    for d in payload["disagreements"]:
        res.bad[(d["system"].split()[0], d["workload"])] = d["what"]
    return res


def render_run(payload: dict, markdown: bool = False) -> str:
    """Everything a run prints: header, tables, cross-check, contention, overhead, tape."""
    res = results_from(payload)
    env = payload["environment"]
    lists = [verification_text(payload["disagreements"], payload["summaries"]),
             contention_text(res, env["clock"])]
    if payload.get("overhead"):
        lists.append(overhead_line(payload["overhead"]))
    if payload.get("tape"):
        lists.append(tape_line(payload["tape"]))
    if markdown:
        lists = [_markdown_list(text) for text in lists]
    if payload.get("latency"):
        lists.append(latency_text(payload["latency"], markdown))
    head = header_line(env).replace("\n", "  \n" if markdown else "\n")
    tables = render(res, payload["loops"], markdown, tuple(payload.get("extra_ratios", ())))
    return "\n\n".join(p for p in [head, tables] + lists if p)


def _markdown_list(text: str) -> str:
    """Indented lines become list items (Markdown would join them into one line)."""
    lines = text.splitlines()
    items = ["- " + x.strip() if x.startswith("  ") else x for x in lines]
    if len(items) > 1 and not lines[1].startswith("  "):
        return text
    return "\n".join(items[:1] + ([""] if len(items) > 1 else []) + items[1:])


def header_line(env: dict) -> str:
    versions = ", ".join(f"{s} {v}" for s, v in env["versions"].items() if s != "cpython")
    return (f"zygopy benchmarks, {env['date']}, {env['machine']}, CPython {env['python']}, "
            f"{env['pinning']}, {env['mode']} mode, {env['clock']} clock, "
            f"budget {env['budget_s']:g} s/task\nzygopy commit "
            f"{env.get('zygopy_commit', 'unknown')}; versions: {versions}")


def verification_text(disagreements: list, summaries: list) -> str:
    head = ("Cross-check: all values and gradients agree." if not disagreements else
            f"Cross-check: {len(disagreements)} disagreement(s); those cells show n/a:")
    bad = [f"  ! {d['workload']} / {d['system']}: {d['what']}" for d in disagreements]
    return "\n".join([head] + bad + [f"  {s}" for s in summaries])


def contention_text(res: Results, clock: str) -> str:
    """How much of its core each worker got while timing (CPU time over wall time)."""
    shares = sorted((rec["cpu_share"], f"{s} {w} {k}") for (s, w, k), rec in res.cells.items()
                    if rec.get("ok") and "cpu_share" in rec)
    if not shares:
        return ""
    mean = sum(x for x, _ in shares) / len(shares)
    line = (f"Share of its core each worker got while timing: mean {mean:.0%}, "
            f"lowest {shares[0][0]:.0%} ({shares[0][1]}).")
    if shares[0][0] < 0.8 and clock == "wall":
        line += (" Other jobs were running: wall-clock medians are inflated and their "
                 "ratios unreliable; rerun on an idle machine or with --clock cpu.")
    return line


def overhead_line(found: dict) -> str:
    cells = []
    for name, rec in found.items():
        text = format_ns(rec["median_ns"]) if rec.get("ok") else "n/a (" + rec["error"] + ")"
        cells.append(f"{name} {text}")
    return ("Per-call overhead, value and gradient of f(x) = x * x (target: zygopy under "
            "3 us):\n  " + "\n  ".join(cells))


def tape_line(tape: dict) -> str:
    if not tape.get("ok"):
        return f"Tape memory (pow_loop, n = {tape['n']:,}, zygopy llvm): n/a: {tape['error']}"
    bpi = tape["bytes_per_iter"]
    # RSS moves by pages and allocator arenas: 64 KiB is below what this can resolve.
    verdict = "meets" if (tape["peak"] - tape["baseline"] - 65536) / tape["n"] <= 16 \
        else "misses"
    return (f"Tape memory (pow_loop, n = {tape['n']:,}, zygopy pullback llvm + back): "
            f"{bpi:.2f} bytes/iteration (peak RSS {tape['peak'] / 2**20:.1f} MiB over a "
            f"{tape['baseline'] / 2**20:.1f} MiB baseline; {verdict} the <= 16 target; "
            f"gradient {tape['grad']:.10g}, exact {tape['grad_expected']:.10g})")


def latency_text(lat: dict, markdown: bool = False) -> str:
    """The fresh-process latency table (`bench/latency.py`): each step's median over the
    processes, then the first gradient against Numba's first call."""
    med = medians(lat)
    rows, numpy_ns = [], []
    for probe, got in lat["probes"].items():
        if got["error"] and not got["samples"]:
            rows.append([f"{probe}: n/a", got["error"].replace("|", "/")])
            continue
        numpy_ns += [s["numpy_ns"] for s in got["samples"]]
        for step, ns in med[probe].items():
            rows.append([LABELS.get(step, step), format_ns(ns)])
        warned = {w for s in got["samples"] for w in s.get("warnings", [])}
        rows += [[f"{probe} warned", w] for w in sorted(warned)]
    numpy_part = (f"; numpy imported first, not counted: {format_ns(median(numpy_ns))}"
                  if numpy_ns else "")
    title = (f"Fresh-process latency, lotka_volterra (median of {lat['runs']} fresh "
             f"processes each, {lat['clock']} clock{numpy_part}):")
    out = [title, "", format_table(["step", "median"], rows, markdown)]
    zy, nb = med.get("zygopy"), med.get("numba")
    if zy and nb and nb["first njit call"] > 0:
        zy_total = zy["import adjoint"] + zy["import jit"] + zy["first gradient"]
        nb_total = nb["import numba"] + nb["first njit call"]
        first = format_ratio(zy["first gradient"] / nb["first njit call"])
        out += ["", (f"First gradient / Numba's first call: {first}; imports and first "
                     f"call: zygopy {format_ns(zy_total)}, Numba {format_ns(nb_total)} "
                     f"({format_ratio(zy_total / nb_total)}).")]
    warm = med.get("zygopy-cached")
    if warm and zy:
        out += ["", (f"With the disk cache warm, the first gradient takes "
                     f"{format_ns(warm['first gradient, cache warm'])} after import "
                     f"(cold: {format_ns(zy['first gradient'])}).")]
    return "\n".join(out)
