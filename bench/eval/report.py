#!/usr/bin/env python3
"""Tables and plots of the evaluation (issues 8 and 20) of one precision.

Reads bench/kernels/eval_bench's CSV files (eval*.csv) in --results and
writes to --out:
  summary.md     the headline table per group of shapes, the issue's targets
                 for this precision, model quality against the oracle, every
                 shape's times and ratios, and the configurations chosen;
  headline.json  the same headline figures, for scripts/readme_tables.py;
  <group>.png    TFLOP/s per shape: blocktune's model-only and top-10
                 answers, the oracle, the vendor library and Triton.
Needs only Python 3 and, for the plots, matplotlib (Debian:
python3-matplotlib); --no-plots writes the tables alone.

  python3 bench/eval/report.py --results bench/results/h100/eval/bf16 \\
      --out bench/results/h100/eval/bf16
"""
import argparse
import csv
import glob
import json
import math
import os
import sys

THESIS = ["square", "mlp", "cov", "conv56", "conv256"]
ORDER = THESIS + ["deepbench", "proj", "prefill", "decode", "resnet50_b1",
                  "resnet50_b32", "resnet50_1x1_b1", "resnet50_1x1_b32", "odd"]
TITLES = {
    "square": "Square GEMM, M = N = K",
    "mlp": "MLP, C = A B^T, A N x N, B 16 x N",
    "cov": "Covariance, C = A B^T, M = N = 64",
    "conv56": "Conv 3x3, batch 1, 56 x 56, C = K",
    "conv256": "Conv 3x3, batch 1, C = K = 256",
    "deepbench": "DeepBench GEMMs",
    "proj": "BERT-base projections (NT)",
    "prefill": "Llama-7B-class prefill projections (NT)",
    "decode": "LLM decode, N = 1-16 (NT)",
    "resnet50_b1": "ResNet-50 3x3 convolutions, batch 1",
    "resnet50_b32": "ResNet-50 3x3 convolutions, batch 32",
    "resnet50_1x1_b1": "ResNet-50 1x1 and strided 1x1, batch 1",
    "resnet50_1x1_b32": "ResNet-50 1x1 and strided 1x1, batch 32",
    "odd": "Odd sizes",
}
# Issue 20's targets per precision: geomean of vendor / top-10 over every
# shape, the floor of that ratio, the geomean of vendor / model-only.
TARGETS = {"bf16": (1.3, 0.8, 1.2), "fp16": (1.3, 0.8, 1.2),
           "tf32": (1.3, 0.8, 1.2), "fp32": (1.5, 0.9, 1.4)}
# Model quality: median model / oracle speed, median top-10 / oracle, and
# the share of shapes whose model-only answer is within 5% of the oracle.
QUALITY = (0.97, 0.995, 0.8)
NUMBERS = ("gflop", "model_us", "model_predicted_us", "top10_us", "oracle_us",
           "vendor_us", "triton_us", "relerr_model", "relerr_top10",
           "relerr_oracle", "model_repeat_us", "vendor_first_us")


def number(text):
    return float(text) if text not in ("", None) else float("nan")


def geomean(values):
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def median(values):
    values = sorted(v for v in values if math.isfinite(v))
    if not values:
        return float("nan")
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def read_torch_conv(results):
    """torch_conv.tsv (bench/kernels/torch_conv_bench.py): context -> us, and
    its '#' lines."""
    path = os.path.join(results, "torch_conv.tsv")
    if not os.path.exists(path):
        return {}, []
    times = {}
    with open(path) as f:
        lines = f.readlines()
    header = [l[1:].strip() for l in lines if l.startswith("#")]
    for r in csv.DictReader((l for l in lines if not l.startswith("#")), delimiter="\t"):
        times[r["context"]] = float(r["torch_us"])
    return times, header


def read_rows(results):
    """eval*.csv rows. A convolution's vendor is the faster of eval_bench's
    cuDNN (cudnnFind, the legacy API) and PyTorch's cuDNN (torch_conv.tsv,
    the graph API with benchmark mode), where that file is present:
    cudnn_find_us keeps the first, torch_us the second."""
    rows, header, where = [], [], {}
    torch_us, torch_header = read_torch_conv(results)
    for path in sorted(glob.glob(os.path.join(results, "eval*.csv"))):
        with open(path) as f:
            lines = f.readlines()
        # Parts measured on one machine carry the same header: say it once.
        header += [h for h in (l[1:].strip() for l in lines if l.startswith("#"))
                   if h not in header]
        for r in csv.DictReader(l for l in lines if not l.startswith("#")):
            # A shape measured again goes in a new part; the old part's rows
            # of it leave this folder, or the shape would count twice.
            key = (r["group"], r["context"])
            if key in where:
                sys.exit(f"report.py: {r['group']} '{r['context']}' is in both "
                         f"{where[key]} and {os.path.basename(path)}: keep one "
                         "(move the older part's rows to history/)")
            where[key] = os.path.basename(path)
            for k in NUMBERS:
                r[k] = number(r.get(k))
            r["cudnn_find_us"] = r["vendor_us"] if r["vendor"] == "cuDNN" else float("nan")
            r["torch_us"] = torch_us.get(r["context"], float("nan"))
            if r["torch_us"] < r["vendor_us"]:
                r["vendor_us"] = r["torch_us"]
                r["vendor"], r["vendor_algos"] = "PyTorch cuDNN", "benchmark"
            r["oracle_rank"] = int(r["oracle_rank"])
            r["tried"], r["wrong"] = int(r["tried"]), int(r["wrong"])
            r["v_top10"] = r["vendor_us"] / r["top10_us"]
            r["v_model"] = r["vendor_us"] / r["model_us"]
            r["model_vs_oracle"] = r["oracle_us"] / r["model_us"]
            r["top10_vs_oracle"] = r["oracle_us"] / r["top10_us"]
            r["family"] = r["model_config"].split()[0]
            rows.append(r)
    rank = {g: i for i, g in enumerate(ORDER)}
    rows.sort(key=lambda r: rank.get(r["group"], len(ORDER)))
    if torch_header:
        header += ["conv vendor: the faster of cuDNN's cudnnFind (above) and PyTorch's "
                   "cuDNN: " + "; ".join(torch_header)]
    elif any(r["vendor"] == "cuDNN" for r in rows):
        header += ["conv vendor: cuDNN's cudnnFind alone (no torch_conv.tsv: PyTorch's "
                   "cuDNN was not timed). cuDNN 9's legacy API offers few engines for "
                   "NHWC tensor-core convolutions, so these conv ratios may overstate."]
    return rows, header


def groups_of(rows):
    out = [(g, [r for r in rows if r["group"] == g]) for g in ORDER]
    out = [(g, rs) for g, rs in out if rs]
    out += [("five thesis families", [r for r in rows if r["group"] in THESIS]),
            ("all shapes", rows)]
    return out


def headline_figures(rs):
    tri = [r["triton_us"] / r["top10_us"] for r in rs if math.isfinite(r["triton_us"])]
    return {
        "shapes": len(rs),
        "vendor_over_top10_geomean": geomean([r["v_top10"] for r in rs]),
        "vendor_over_top10_min": min(r["v_top10"] for r in rs),
        "vendor_over_model_geomean": geomean([r["v_model"] for r in rs]),
        "triton_over_top10_geomean": geomean(tri) if tri else None,
        "triton_shapes": len(tri),
        "model_within_5pct": sum(r["model_vs_oracle"] >= 0.95 for r in rs),
        "median_model_over_oracle": median([r["model_vs_oracle"] for r in rs]),
        "median_top10_over_oracle": median([r["top10_vs_oracle"] for r in rs]),
        "vendor_over_oracle_geomean": geomean([r["vendor_us"] / r["oracle_us"] for r in rs]),
    }


def fmt(v, spec=".2f", suffix="x"):
    return "-" if v is None or not math.isfinite(v) else f"{v:{spec}}{suffix}"


def headline(rows):
    out = ["| group | shapes | vendor / top-10 (geomean) | min | vendor / model (geomean) | "
           "vendor / oracle (geomean) | Triton / top-10 (geomean) | model within 5% of oracle |",
           "|---|---|---|---|---|---|---|---|"]
    for name, rs in groups_of(rows):
        h = headline_figures(rs)
        bold = "**" if name in ("five thesis families", "all shapes") else ""
        out.append(f"| {bold}{name}{bold} | {h['shapes']} | {fmt(h['vendor_over_top10_geomean'])} | "
                   f"{fmt(h['vendor_over_top10_min'])} | {fmt(h['vendor_over_model_geomean'])} | "
                   f"{fmt(h['vendor_over_oracle_geomean'])} | {fmt(h['triton_over_top10_geomean'])} | "
                   f"{h['model_within_5pct']}/{h['shapes']} |")
    return out


def targets(rows, precision):
    geo_t, floor_t, model_t = TARGETS[precision]
    h = headline_figures(rows)
    met = lambda ok: "met" if ok else "**missed**"
    low = sorted(rows, key=lambda r: r["v_top10"])
    below = [r for r in low if r["v_top10"] < floor_t]
    out = [
        f"- Geomean over all {len(rows)} shapes, vendor time / blocktune top-10 time: "
        f"**{h['vendor_over_top10_geomean']:.2f}x** (target >= {geo_t}x): "
        f"{met(h['vendor_over_top10_geomean'] >= geo_t)}.",
        f"- Never below {floor_t}x: {met(not below)}; lowest {low[0]['v_top10']:.2f}x "
        f"({low[0]['group']} {low[0]['shape']}); {len(below)} of {len(rows)} shapes below.",
        f"- Model-only geomean: **{h['vendor_over_model_geomean']:.2f}x** (target >= {model_t}x): "
        f"{met(h['vendor_over_model_geomean'] >= model_t)}.",
        f"- The oracle (the best found by the sweep) against the vendor: geomean "
        f"{h['vendor_over_oracle_geomean']:.2f}x, the ceiling of these kernel families "
        f"on these shapes.",
    ]
    return out


def quality(rows):
    h = headline_figures(rows)
    share = h["model_within_5pct"] / len(rows)
    met = lambda ok: "met" if ok else "**missed**"
    m_t, t_t, s_t = QUALITY
    out = [
        f"- Median model-only speed / oracle speed: **{h['median_model_over_oracle']:.3f}** "
        f"(target >= {m_t}): {met(h['median_model_over_oracle'] >= m_t)}.",
        f"- Median top-10 speed / oracle speed: **{h['median_top10_over_oracle']:.3f}** "
        f"(target >= {t_t}): {met(h['median_top10_over_oracle'] >= t_t)}.",
        f"- Model-only within 5% of the oracle on {h['model_within_5pct']} of {len(rows)} shapes "
        f"(**{100 * share:.0f}%**; target >= {100 * s_t:.0f}%): {met(share >= s_t)}.",
    ]
    in_top = sum(1 for r in rows if r["oracle_rank"] > 0)
    out.append(f"- The oracle's configuration is in the model's top 10 on {in_top} of "
               f"{len(rows)} shapes (rank 1 on {sum(r['oracle_rank'] == 1 for r in rows)}).")
    cross = [r for r in rows if r["oracle_config"].split()[0] != r["family"]]
    if cross:
        out.append(f"- The model's answer is of another family than the oracle's on "
                   f"{len(cross)} shapes (median model/oracle there "
                   f"{median([r['model_vs_oracle'] for r in cross]):.3f}).")
    errs = [r["model_predicted_us"] / r["model_us"] for r in rows]
    out.append(f"- Predicted / measured time of the model's answer: median {median(errs):.2f}, "
               f"range {min(errs):.2f} to {max(errs):.2f}.")
    repeats = [abs(r["model_repeat_us"] / r["model_us"] - 1) for r in rows
               if math.isfinite(r["model_repeat_us"])]
    if repeats:
        out.append(f"- Timing noise: the model's answer timed twice differs by a median "
                   f"{100 * median(repeats):.1f}% and at most {100 * max(repeats):.1f}%.")
        # A miss that the answer's own second timing does not confirm: the
        # oracle is the fastest of several timings, the model's answer one
        # of two, so a miss smaller than the answer's own spread is noise.
        within = h["model_within_5pct"]
        unconfirmed = [r for r in rows if r["model_vs_oracle"] < 0.95
                       and math.isfinite(r["model_repeat_us"])
                       and r["oracle_us"] / r["model_repeat_us"] >= 0.95]
        if unconfirmed:
            out.append(f"- Of the {len(rows) - within} misses of 5%, {len(unconfirmed)} "
                       f"{'is' if len(unconfirmed) == 1 else 'are'} "
                       f"within 5% of the oracle in the answer's second timing (the same round): "
                       f"{within + len(unconfirmed)} of {len(rows)} counting those; "
                       f"the figure above counts the first timing only.")
    drift = [r["vendor_first_us"] / r["cudnn_find_us" if r["vendor"] == "PyTorch cuDNN"
                                        else "vendor_us"]
             for r in rows if math.isfinite(r["vendor_first_us"])]
    if drift:
        out.append(f"- The vendor timed before the sweep / beside the picks (the time used): "
                   f"median {median(drift):.3f}, range {min(drift):.2f} to {max(drift):.2f}.")
    worst = sorted(rows, key=lambda r: r["model_vs_oracle"])[:5]
    out.append("- Worst model-only answers: " + "; ".join(
        f"{r['group']} {r['shape']} {r['model_vs_oracle']:.2f} ({r['model_config']} vs "
        f"{r['oracle_config']})" for r in worst) + ".")
    return out


def find_note(r):
    """For a convolution that PyTorch's cuDNN won: cudnnFind's time too."""
    if r["vendor"] != "PyTorch cuDNN" or not math.isfinite(r["cudnn_find_us"]):
        return ""
    return f"; cudnnFind {r['cudnn_find_us']:.1f}"


def shape_table(rows):
    out = ["| group | shape | GFLOP | model us | top-10 us | oracle us | vendor us | Triton us | "
           "vendor/top-10 | vendor/model | model/oracle | oracle rank | swept | max rel. err |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    f1 = lambda v: f"{v:.1f}" if math.isfinite(v) else "-"
    for r in rows:
        err = max(r["relerr_model"], r["relerr_top10"], r["relerr_oracle"])
        out.append(f"| {r['group']} | {r['shape']} | {r['gflop']:.3g} | {f1(r['model_us'])} | "
                   f"{f1(r['top10_us'])} | {f1(r['oracle_us'])} | {f1(r['vendor_us'])} "
                   f"({r['vendor']}, {r['vendor_algos']}{find_note(r)}) | {f1(r['triton_us'])} | "
                   f"{r['v_top10']:.2f} | {r['v_model']:.2f} | {r['model_vs_oracle']:.2f} | "
                   f"{r['oracle_rank'] or 'no'} | {r['tried']} | {err:.1e} |")
    return out


def config_table(rows):
    out = ["| group | shape | model's answer | top-10 pick | oracle |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['group']} | {r['shape']} | {r['model_config']} | "
                   f"{r['top10_config']} | {r['oracle_config']} |")
    return out


def plot(rows, out_dir, precision, device):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    series = [("oracle_us", "oracle (sweep)", "k", "s"),
              ("top10_us", "blocktune top-10", "C0", "o"),
              ("model_us", "blocktune model only", "C9", "x"),
              ("vendor_us", "vendor", "C3", "^"),
              ("triton_us", "Triton (autotuned)", "C2", "d")]
    written = []
    for g, rs in groups_of(rows)[:-2]:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        xs = list(range(len(rs)))
        for key, name, color, marker in series:
            ys = [1e3 * r["gflop"] / r[key] if math.isfinite(r[key]) else float("nan") for r in rs]
            if all(math.isnan(y) for y in ys):
                continue
            if key == "vendor_us":
                vendors = sorted({r["vendor"] for r in rs})
                name = " or ".join(vendors) + " (the faster, best algorithm)" \
                    if len(vendors) > 1 else vendors[0] + " (best algorithm)"
            ax.plot(xs, ys, color=color, marker=marker, linestyle="-" if key != "model_us" else "--",
                    label=name, markersize=5, linewidth=1)
        ax.set_xticks(xs)
        ax.set_xticklabels([r["shape"] for r in rs], rotation=35, ha="right", fontsize=7)
        ax.set_ylabel(f"TFLOP/s ({precision})")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{TITLES.get(g, g)} - {precision} - {device}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{g}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description="tables and plots of one precision's evaluation")
    ap.add_argument("--results", required=True, help="folder with eval*.csv")
    ap.add_argument("--out", required=True, help="folder for summary.md, headline.json, PNGs")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()
    rows, header = read_rows(args.results)
    if not rows:
        print(f"report: no eval*.csv rows in {args.results}", file=sys.stderr)
        return 2
    precisions = sorted({r["precision"] for r in rows})
    if len(precisions) != 1 or precisions[0] not in TARGETS:
        print(f"report: expected one precision of {sorted(TARGETS)} in {args.results}, "
              f"got {precisions}", file=sys.stderr)
        return 2
    precision = precisions[0]
    device = header[0].split(" (")[0] if header else "?"
    planned = set()
    plan = os.path.join(args.results, "plan.tsv")
    if os.path.exists(plan):
        with open(plan) as f:
            planned = {tuple(l.split("\t")[:2]) for l in f if l.strip() and not l.startswith("#")}
    measured = {(r["group"], r["context"]) for r in rows}
    missing = sorted(planned - measured)
    os.makedirs(args.out, exist_ok=True)
    text = ([f"# Evaluation, {precision}, {device}", "",
             "Made by `bench/eval/report.py` from the CSV files beside this one "
             "(`bench/eval/run.sh`: `plan`, then `gpu` on the GPU host, then `report`). "
             "Ratios are vendor time / blocktune time (> 1: blocktune faster); "
             "model/oracle is the oracle's time over the model's answer's (1: the model "
             "found the best).", ""] + [f"    {h}" for h in header] + ["",
             "## Headline", ""] + headline(rows) + ["", "## Targets (issue 20)", ""] +
            targets(rows, precision) + ["", "## Model quality", ""] + quality(rows))
    if missing:
        text += ["", f"Planned but not measured ({len(missing)}): " +
                 "; ".join(f"{g} {c}" for g, c in missing) + "."]
    text += ["", "## Every shape", ""] + shape_table(rows) + \
            ["", "## Configurations chosen", ""] + config_table(rows)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(text) + "\n")
    figures = {name: headline_figures(rs) for name, rs in groups_of(rows)}
    with open(os.path.join(args.out, "headline.json"), "w") as f:
        json.dump({"precision": precision, "device": device, "missing": len(missing),
                   "targets": dict(zip(("geomean", "floor", "model_geomean"), TARGETS[precision])),
                   "quality_targets": dict(zip(("median_model", "median_top10", "within_share"),
                                               QUALITY)),
                   "groups": figures}, f, indent=1, sort_keys=True)
        f.write("\n")
    print("\n".join(headline(rows) + [""] + targets(rows, precision) + quality(rows)))
    if not args.no_plots:
        for path in plot(rows, args.out, precision, device):
            print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
