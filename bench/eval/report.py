#!/usr/bin/env python3
"""Tables and plots of the thesis evaluation (issue 8) from its committed data.

Reads eval_bench's CSV files (eval-*.csv) and triton_gemm.py's triton.csv in
--results, and writes to --out:
  summary.md     the headline table, the targets, every shape's ratios, and
                 the block shapes chosen (thesis Tables 4.3-4.8), with the
                 number of programs each launches;
  <family>.png   TFLOP/s against size (thesis Figs. 4.8-4.12): blocktune's
                 model-only and top-10 answers, the sweep's oracle, the
                 vendor library, cublasSgemm as called and Triton.
Needs only Python 3 and, for the plots, matplotlib (Debian:
python3-matplotlib); --no-plots writes the tables alone.

  python3 bench/eval/report.py --results bench/results/h100/eval \
      --out bench/results/h100/eval
"""
import argparse
import csv
import glob
import math
import os
import sys

THESIS_FAMILIES = ["square", "mlp", "cov", "conv56", "conv256"]
ORDER = THESIS_FAMILIES + ["deepbench", "resnet50_b1", "resnet50_b32"]
TITLES = {
    "square": "Square GEMM, M = N = K",
    "mlp": "MLP, C = A B^T, A N x N, B 16 x N",
    "cov": "Covariance, C = A B^T, M = N = 64",
    "conv56": "Conv 3x3, batch 1, 56 x 56, C = K",
    "conv256": "Conv 3x3, batch 1, C = K = 256",
    "deepbench": "DeepBench GEMMs",
    "resnet50_b1": "ResNet-50 3x3 convolutions, batch 1",
    "resnet50_b32": "ResNet-50 3x3 convolutions, batch 32",
}
TARGET_GEOMEAN, TARGET_FLOOR, TARGET_NEAR, TARGET_NEAR_SHARE = 1.3, 0.85, 0.95, 0.9


def parse_context(text):
    words = text.split()
    fields = dict(w.split("=", 1) for w in words[1:])
    fields["op"] = words[0]
    return fields


def parse_xb(text):
    return dict((k, int(v)) for k, v in (w.split("=") for w in text.split()))


def programs(ctx, xb_text):
    """Programs k(x_B) launches: tiles of C (the implicit GEMM's for a
    convolution) times K_G."""
    xb = parse_xb(xb_text)
    if ctx["op"] == "gemm":
        m, n = int(ctx["m"]), int(ctx["n"])
    else:
        pad, stride, dil = (int(ctx[k].split("x")[0]) for k in ("pad", "stride", "dilation"))
        r = int(ctx["r"])
        p = (int(ctx["h"]) + 2 * pad - dil * (r - 1) - 1) // stride + 1
        q = (int(ctx["w"]) + 2 * pad - dil * (r - 1) - 1) // stride + 1
        m, n = int(ctx["n"]) * p * q, int(ctx["k"])
    return math.ceil(m / xb["ML"]) * math.ceil(n / xb["NL"]) * xb["KG"]


def size_of(family, ctx):
    """The x axis of a family's plot, and its label."""
    return {
        "square": (int(ctx.get("m", 0)), "M = N = K"),
        "mlp": (int(ctx.get("m", 0)), "N"),
        "cov": (int(ctx.get("k", 0)), "K"),
        "conv56": (int(ctx.get("c", 0)), "C = K"),
        "conv256": (int(ctx.get("h", 0)), "H = W"),
    }.get(family, (None, None))


def number(text):
    return float(text) if text not in ("", None) else float("nan")


def geomean(values):
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def read_csv(path):
    """A CSV file's rows as dicts; lines starting with # are comments."""
    with open(path) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def read_rows(results):
    rows = []
    for path in sorted(glob.glob(os.path.join(results, "eval-*.csv"))):
        for r in read_csv(path):
            r["ctx"] = parse_context(r["context"])
            for k in ("gflop", "model_us", "model_predicted_us", "top10_us",
                      "oracle_us", "sgemm_us", "lt_us", "cudnn_us", "vendor_us",
                      "relerr_model", "relerr_top10", "relerr_oracle",
                      "model_repeat_us"):
                r[k] = number(r.get(k))
            rows.append(r)
    triton = {}
    path = os.path.join(results, "triton.csv")
    if os.path.exists(path):
        for t in read_csv(path):
            triton[t["context"]] = (number(t["triton_us"]), t["triton_config"])
    for r in rows:
        r["triton_us"], r["triton_config"] = triton.get(r["context"], (float("nan"), ""))
        r["v_top10"] = r["vendor_us"] / r["top10_us"]
        r["v_model"] = r["vendor_us"] / r["model_us"]
        r["model_vs_oracle"] = r["oracle_us"] / r["model_us"]
        r["top10_vs_oracle"] = r["oracle_us"] / r["top10_us"]
    # The model's top 10 per shape, from the plan, when it is there.
    plan = {}
    path = os.path.join(results, "plan.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                family, ctx, rank, xb, predicted = line.rstrip("\n").split("\t")
                plan.setdefault((family, ctx), []).append(xb)
    for r in rows:
        top = plan.get((r["family"], r["context"]))
        r["oracle_rank"] = (top.index(r["oracle_xb"]) + 1 if top and r["oracle_xb"] in top
                            else (0 if top else None))
        r["model_pred_err"] = r["model_predicted_us"] / r["model_us"]
    rank = {f: i for i, f in enumerate(ORDER)}
    rows.sort(key=lambda r: (rank.get(r["family"], len(ORDER)), r["family"]))
    return rows


def headline(rows):
    out = ["| family | shapes | vendor / blocktune top-10 (geomean) | min | "
           "vendor / blocktune model (geomean) | Triton / top-10 (geomean) | "
           "model within 5% of oracle |",
           "|---|---|---|---|---|---|---|"]
    groups = [(f, [r for r in rows if r["family"] == f]) for f in ORDER]
    groups += [("five thesis families", [r for r in rows if r["family"] in THESIS_FAMILIES]),
               ("all shapes", rows)]
    for name, rs in groups:
        if not rs:
            continue
        tri = [r["triton_us"] / r["top10_us"] for r in rs if math.isfinite(r["triton_us"])]
        near = sum(r["model_vs_oracle"] >= TARGET_NEAR for r in rs)
        bold = "**" if name in ("five thesis families", "all shapes") else ""
        out.append(f"| {bold}{name}{bold} | {len(rs)} | {geomean([r['v_top10'] for r in rs]):.2f}x | "
                   f"{min(r['v_top10'] for r in rs):.2f}x | {geomean([r['v_model'] for r in rs]):.2f}x | "
                   f"{(f'{geomean(tri):.2f}x' if tri else '-')} | {near}/{len(rs)} |")
    return out


def targets(rows):
    five = [r for r in rows if r["family"] in THESIS_FAMILIES]
    g = geomean([r["v_top10"] for r in five])
    low5 = min(five, key=lambda r: r["v_top10"]) if five else None
    low = min(rows, key=lambda r: r["v_top10"])
    below = [r for r in rows if r["v_top10"] < TARGET_FLOOR]
    near = sum(r["model_vs_oracle"] >= TARGET_NEAR for r in rows)
    share = near / len(rows)
    met = lambda ok: "met" if ok else "**missed**"
    out = [
        f"- Geomean over the five thesis families' {len(five)} shapes, vendor time / "
        f"blocktune top-10 time: **{g:.2f}x** (target >= {TARGET_GEOMEAN}x): {met(g >= TARGET_GEOMEAN)}.",
        f"- Lowest ratio: {low5['v_top10']:.2f}x in the five families ({low5['family']} "
        f"{low5['shape']}), {low['v_top10']:.2f}x over all shapes ({low['family']} {low['shape']}); "
        f"target never below {TARGET_FLOOR}x: {met(not below)}"
        + (f" ({len(below)} shapes below: " + ", ".join(
            f"{r['family']} {r['shape']} {r['v_top10']:.2f}x" for r in below) + ")" if below else "") + ".",
        f"- Model-only answer within 5% of the oracle on {near} of {len(rows)} shapes "
        f"({100 * share:.0f}%; target >= {100 * TARGET_NEAR_SHARE:.0f}%): {met(share >= TARGET_NEAR_SHARE)}. "
        f"Median model/oracle speed {sorted(r['model_vs_oracle'] for r in rows)[len(rows) // 2]:.3f}, "
        f"top-10/oracle {sorted(r['top10_vs_oracle'] for r in rows)[len(rows) // 2]:.3f}.",
    ]
    repeats = sorted(abs(r["model_repeat_us"] / r["model_us"] - 1) for r in rows
                     if math.isfinite(r["model_repeat_us"]))
    if repeats:
        out.append(
            f"- Timing noise: the model's answer timed twice differs by a median "
            f"{100 * repeats[len(repeats) // 2]:.1f}% and at most {100 * repeats[-1]:.1f}% "
            f"over {len(repeats)} shapes.")
    missed = [r for r in rows if r["model_vs_oracle"] < TARGET_NEAR]
    known = [r for r in missed if r["oracle_rank"] is not None]
    if known:
        in_top = [r for r in known if r["oracle_rank"] > 0]
        errs = sorted(r["model_pred_err"] for r in missed)
        out.append(
            f"- Of the {len(missed)} shapes whose model answer is more than 5% off, the oracle's block shape "
            f"is in the model's own top 10 for {len(in_top)} (so top-10 re-benchmarking finds it), "
            f"outside it for {len(known) - len(in_top)}. On those shapes the model predicted its pick at a "
            f"median {errs[len(errs) // 2]:.2f} of the time it measured (predicted / measured).")
    return out


def shape_table(rows):
    out = ["| family | shape | GFLOP | model us | top-10 us | oracle us | vendor us (which) | "
           "sgemm us | Triton us | vendor/top-10 | vendor/model | model/oracle | model predicted/measured | "
           "oracle's rank in model top 10 | max rel. err |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["ctx"]["op"] == "gemm":
            which = f"cuBLAS best of sgemm and {r['lt_candidates']} cublasLt"
        else:
            which = f"cuDNN {r['cudnn_algo']} of {r['cudnn_algorithms']}"
        err = max(r["relerr_model"], r["relerr_top10"], r["relerr_oracle"])
        fmt = lambda v: f"{v:.1f}" if math.isfinite(v) else "-"
        out.append(f"| {r['family']} | {r['shape']} | {r['gflop']:.3g} | {fmt(r['model_us'])} | "
                   f"{fmt(r['top10_us'])} | {fmt(r['oracle_us'])} | {fmt(r['vendor_us'])} ({which}) | "
                   f"{fmt(r['sgemm_us'])} | {fmt(r['triton_us'])} | {r['v_top10']:.2f} | "
                   f"{r['v_model']:.2f} | {r['model_vs_oracle']:.2f} | {r['model_pred_err']:.2f} | "
                   f"{'-' if r['oracle_rank'] is None else (r['oracle_rank'] or 'no')} | {err:.1e} |")
    return out


def block_tables(rows):
    out = []
    for f in ORDER:
        rs = [r for r in rows if r["family"] == f]
        if not rs:
            continue
        out += ["", f"**{TITLES[f]}**", "",
                "| shape | model x_B | programs | top-10 x_B | programs | oracle x_B | programs | swept |",
                "|---|---|---|---|---|---|---|---|"]
        for r in rs:
            cells = []
            for k in ("model_xb", "top10_xb", "oracle_xb"):
                cells += [r[k].replace(" ", ", "), str(programs(r["ctx"], r[k]))]
            out.append(f"| {r['shape']} | " + " | ".join(cells) + f" | {r['tried']} |")
    return out


def plot(rows, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    series = [("oracle_us", "oracle (sweep)", "k:", "s"),
              ("top10_us", "blocktune top-10", "C0-", "o"),
              ("model_us", "blocktune model only", "C0--", "x"),
              ("vendor_us", "vendor best", "C3-", "^"),
              ("sgemm_us", "cublasSgemm as called", "C1:", "v"),
              ("triton_us", "Triton (fp32 ieee)", "C2-.", "d")]
    for f in ORDER:
        rs = [r for r in rows if r["family"] == f]
        if not rs:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        x, label = size_of(f, rs[0]["ctx"])
        categorical = x is None
        xs = list(range(len(rs))) if categorical else [size_of(f, r["ctx"])[0] for r in rs]
        for key, name, style, marker in series:
            ys = [1e3 * r["gflop"] / r[key] if math.isfinite(r[key]) else float("nan") for r in rs]
            if all(math.isnan(y) for y in ys):
                continue
            if key == "vendor_us":
                name = "cuDNN (best of cudnnFind)" if rs[0]["ctx"]["op"] == "conv" else \
                    "cuBLAS (best of sgemm, cublasLt)"
            if categorical:  # separate shapes: markers, no lines between them
                ax.plot(xs, ys, color=style[:2] if style[0] == "C" else style[0],
                        marker=marker, linestyle="none", label=name, markersize=6)
            else:
                ax.plot(xs, ys, style, marker=marker, label=name, markersize=5)
        if categorical:
            ax.set_xticks(xs)
            ax.set_xticklabels([r["shape"].replace(" 3x3", "") for r in rs],
                               rotation=35, ha="right", fontsize=7)
        else:
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs)
            ax.set_xticklabels([str(v) for v in xs])
            ax.set_xlabel(label)
        ax.set_ylabel("TFLOP/s (fp32, no TF32)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{TITLES[f]} - H100 SXM")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{f}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description="tables and plots of the thesis evaluation")
    ap.add_argument("--results", required=True, help="folder with eval-*.csv and triton.csv")
    ap.add_argument("--out", required=True, help="folder for summary.md and the PNGs")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()
    rows = read_rows(args.results)
    if not rows:
        print(f"report: no eval-*.csv rows in {args.results}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    text = (["# Thesis evaluation on the H100 (issue 8)", "",
             "Made by `bench/eval/report.py` from the CSV files beside this one. "
             "Ratios are vendor time / blocktune time (> 1: blocktune faster).", "",
             "Made with `bench/eval/run.sh plan` (blocktune's top 10 through one BatchQuery "
             "over the shipped models), `bench/eval/run.sh gpu EVAL_BENCH` on an H100 "
             "(`eval_bench --sweep 300 --budget-ms 6000`, then `triton_gemm.py`) and "
             "`bench/eval/run.sh report`.", "",
             "## Headline", ""] + headline(rows) + ["", "## Targets", ""] + targets(rows) +
            ["", "## Every shape", ""] + shape_table(rows) +
            ["", "## Block shapes chosen (thesis Tables 4.3-4.8)", "",
             "x_B = M_L, N_L, M_S, N_S, U, K_G; programs = tiles of C x K_G; "
             "swept = block shapes timed for the oracle."] + block_tables(rows))
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(text) + "\n")
    print("\n".join(headline(rows) + [""] + targets(rows)))
    if not args.no_plots:
        for path in plot(rows, args.out):
            print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
