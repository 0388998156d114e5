#!/usr/bin/env python3
"""README.md's performance figures, made from the files in bench/results/
and the shipped models in models/pretrained/.

README.md holds regions

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

whose text this script writes: every number in them comes from a results
file. The prose around a number inside a region is the template in this
file (one function per region, named in GENERATORS); prose outside the
regions is README.md's own. Edit the template here, then run the script.

    scripts/readme_tables.py           rewrite README.md's regions
    scripts/readme_tables.py --check   exit 1 with a diff if README.md is not
                                       what the results files make (ctest:
                                       readme_tables_check)
    --blocktune build/client/blocktune also the CLI's `families --json`
                                       against bench/results/cpu/families.tsv
                                       (rewritten, or with --check, compared)

A results file whose lines are not where the parser expects them is an
error naming the file and what is missing, never a silently wrong number.
Python 3 standard library only.
"""

import argparse
import datetime
import difflib
import functools
import gzip
import json
import math
import pathlib
import re
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
WIDTH = 76  # README paragraphs are wrapped at about this width

REGION = re.compile(
    r"^<!-- generated: (?P<name>[a-z0-9_]+) -->\n(?P<body>.*?)"
    r"^<!-- end generated -->$",
    re.M | re.S,
)


class ResultsError(Exception):
    """A results file lacks what a region needs."""


class Results:
    """Reads bench/results/ files once, with errors that name the file."""

    def __init__(self, root, models_root=None):
        self.root = pathlib.Path(root)
        self.models_root = pathlib.Path(models_root or ROOT / "models" / "pretrained")
        self._cache = {}

    def text(self, rel):
        if rel not in self._cache:
            path = self.root / rel
            try:
                self._cache[rel] = path.read_text(encoding="utf-8")
            except OSError as e:
                raise ResultsError(f"{rel}: cannot read: {e.strerror}") from e
        return self._cache[rel]

    def search(self, rel, pattern, what, flags=re.M):
        m = re.search(pattern, self.text(rel), flags)
        if m is None:
            raise ResultsError(f"{rel}: no {what} (pattern {pattern!r})")
        return m


def fill(text):
    """One Markdown paragraph wrapped like the README's hand-written ones."""
    return textwrap.fill(
        " ".join(text.split()),
        width=WIDTH,
        break_long_words=False,
        break_on_hyphens=False,
    )


def thousands(n):
    return f"{int(n):,}"


def number_word(n):
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five",
             6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    return words.get(int(n), str(n))


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---- bench/results/h100/kernel_bench.txt --------------------------------

KERNEL_FAMILIES = [  # (key in the file, README label with {sizes})
    ("square", "square {sizes}"),
    ("mlp", "MLP N = {sizes}"),
    ("cov", "covariance K = {sizes}"),
    ("conv56", "conv 3x3 56x56, C = K = {sizes}"),
    ("conv256", "conv 3x3 C = K = 256, H = {sizes}"),
]


def kernel_ratios(r):
    """The newest ratio line per family ('# square  1024 0.85 | ...')."""
    rel = "h100/kernel_bench.txt"
    lines = r.text(rel).splitlines()
    keys = {k for k, _ in KERNEL_FAMILIES}
    newest, targets, date, about = {}, {}, None, {}
    in_targets = False
    for line in lines:
        m = re.match(r"^# -+ (\d{4}-\d\d-\d\d)", line)
        if m:
            date = m.group(1)
            about[date] = line
        if line.startswith("# Issue 3 targets"):
            in_targets = True
            continue
        fields = re.split(r"\s{2,}", line.lstrip("# ").strip())
        if in_targets:
            if fields and fields[0] in keys and len(fields) >= 3:
                targets[fields[0]] = fields[1]
                continue
            if fields and fields[0] != "family":
                in_targets = False
        ratio_line = re.match(r"^#\s+(\w+)\s+(.*\|.*)$", line)
        if ratio_line and ratio_line.group(1) in keys:
            key = ratio_line.group(1)
            parts = re.split(r"\s{3,}", ratio_line.group(2).strip(), maxsplit=1)
            measured = parts[0]
            pairs = re.findall(r"(?:[A-Za-z]+=)?(\d+) (\d+\.\d+)", measured)
            if not pairs:
                raise ResultsError(f"{rel}: no 'size ratio' pairs in {line!r}")
            geomean = re.search(r"geomean (\d+\.\d+)", measured)
            newest[key] = {
                "pairs": pairs,
                "geomean": geomean.group(1) if geomean else None,
                "verdict": parts[1].strip() if len(parts) > 1 else "",
                "date": date,
            }
    rows = []
    for key, label in KERNEL_FAMILIES:
        if key not in newest:
            raise ResultsError(f"{rel}: no ratio line for family {key!r}")
        if key not in targets:
            raise ResultsError(f"{rel}: no target for {key!r} under '# Issue 3 targets'")
        n = newest[key]
        sizes = " / ".join(s for s, _ in n["pairs"])
        ratios = " / ".join(x for _, x in n["pairs"])
        if n["geomean"]:
            ratios += f" (geomean {n['geomean']})"
        rows.append([label.format(sizes=sizes), ratios, targets[key], n["verdict"]])
    dates = {n["date"] for n in newest.values()}
    when = ", ".join(sorted(d for d in dates if d)) or "undated"
    source = ""
    if any("bench/results/h100/eval/" in about.get(d, "") for d in dates):
        source = (": the same protocol, run by the thesis evaluation's "
                  "`bench/kernels/eval_bench` on the best of the model's top 10 "
                  "plus the sweep")
    return (table(["family", "ratio = vendor / ours", "target", "verdict"], rows)
            + "\n\n" + fill(f"Newest ratios in `bench/results/h100/kernel_bench.txt` "
                            f"(its {when} section{source})."))


# ---- bench/results/cpu/sample_h100.txt, sampler_bench.txt ---------------

def sampling(r):
    rel = "cpu/sample_h100.txt"
    acceptance = {}
    for m in re.finditer(
            r"^\$ blocktune sample --op (\w+) --sampler (\w+).*?\n"
            r"(?:.*\n)*?acceptance: .*?= (\d+(?:\.\d+)?)%", r.text(rel), re.M):
        acceptance[(m.group(1), m.group(2))] = float(m.group(3))
    for key in [("gemm", "uniform"), ("conv", "uniform"), ("gemm", "bayes"),
                ("conv", "bayes")]:
        if key not in acceptance:
            raise ResultsError(f"{rel}: no acceptance line for {key[0]} {key[1]}")
    rel = "cpu/sampler_bench.txt"
    rates = [float(m.group(1)) for m in re.finditer(
        r"^(?:gemm|conv)\s+(?:uniform|bayes)\s+\d+\s+\d+\s+[\d.]+\s+(\d+(?:\.\d+)?)",
        r.text(rel), re.M)]
    if len(rates) < 4:
        raise ResultsError(f"{rel}: expected 4 rows 'op sampler draws accepted "
                           f"acceptance_% Mdraws/s', found {len(rates)}")
    a = acceptance
    return fill(
        f"On the H100 profile the uniform sampler keeps "
        f"{a['gemm', 'uniform']:.2f}% of GEMM draws and "
        f"{a['conv', 'uniform']:.2f}% of convolution draws; the Naive Bayes "
        f"generator keeps {a['gemm', 'bayes']:.1f}% and {a['conv', 'bayes']:.1f}%, "
        f"at {min(rates):.2g} to {max(rates):.2g} million draws per second on "
        f"one core (`bench/results/cpu/sample_h100.txt`, `sampler_bench.txt`).")


# ---- bench/results/h100/campaigns.txt -----------------------------------

def campaigns(r):
    rel = "h100/campaigns.txt"
    runs = {}
    line = r.search(rel, r"^# campaign counters.*$", "'# campaign counters' line").group(0)
    for m in re.finditer(r"(gemm|conv) (\d+)(?: samples)? in [\d.]+ s = (\d+(?:\.\d+)?) samples/s", line):
        runs[m.group(1)] = (int(m.group(2)), m.group(3))
    if set(runs) != {"gemm", "conv"}:
        raise ResultsError(f"{rel}: the counters line names {sorted(runs)}, not gemm and conv")
    failures = r.search(rel, r"^# failures: (.*)$", "'# failures:' line").group(1)
    verified = re.findall(r"(\d+)/(\d+)", failures)
    all_checked = verified and all(a == b for a, b in verified)
    if failures.startswith("none") and all_checked:
        checked = "All were checked, and none failed."
    else:
        checked = f"Failures and checks: {failures}."
    (g, g_rate), (c, c_rate) = runs["gemm"], runs["conv"]
    note = r.search(rel, r"^# note: (.*)$", "'# note:' line").group(1)
    return fill(
        f"`models/pretrained/h100-sxm/` holds what the campaign code measured on "
        f"an H100 SXM in fp32: {thousands(g)} GEMM samples at {g_rate} samples/s and "
        f"{thousands(c)} convolution samples at {c_rate} samples/s. {checked} "
        f"{note} "
        f"(`bench/results/h100/campaigns.txt`). `blocktune import "
        f"models/pretrained/h100-sxm/gemm-samples.json.gz` loads a dataset into "
        f"any store.")


# ---- bench/results/{h100,h200}/campaigns/run*/*_progress.json ------------

def datasets(r):
    """A row per tensor-core-era campaign run: its final progress (JSON)."""
    rows = []
    paths = sorted(r.root.glob("h*/campaigns/run*/*_progress.json"),
                   key=lambda p: (p.parent.name, p.name))
    if not paths:
        raise ResultsError("h100/campaigns/run*/: no *_progress.json")
    for path in paths:
        rel = str(path.relative_to(r.root))
        try:
            d = json.loads(r.text(rel))
            c = d["campaign"]
            spec = c["spec"]
            done = int(c.get("samples_ok", 0)) + int(c.get("samples_failed", 0))
            elapsed = float(d["elapsed_seconds"])
            verified = int(d.get("verified", 0))
            acceptance = 100 * float(d["acceptance"])
            device = c["device"]["name"].replace("NVIDIA ", "")
        except (ValueError, KeyError) as e:
            raise ResultsError(f"{rel}: not a campaign's final progress: {e}") from e
        failed = sum(int(v) for v in (d.get("failures") or {}).values())
        # A guided campaign draws nothing: its candidates are the models'; a
        # --retune-stale one measures the store's stale samples again.
        accepted = ("re-measure" if spec.get("retune_stale")
                    else "guided" if spec.get("sampler") == "guided"
                    else f"{acceptance:.1f}%")
        rows.append((path.parent.name, device, spec["op"][3:].lower(),
                     spec["dtype"][6:].lower(), thousands(done),
                     f"{done / elapsed:.1f}", accepted,
                     str(failed), f"{verified}/{done}"))
    return table(["run", "GPU", "op", "precision", "samples", "samples/s",
                  "acceptance", "failed", "verified"], rows)


# ---- models: train_gpu.txt, oracle.txt, query_bench.txt -----------------

def query_bench_cold(r):
    """Cold p50 ms, cores and load average of the newest query_bench run."""
    rel = "cpu/query_bench.txt"
    cold = r.search(rel, r"^cold: .*?latency p50 (\d+(?:\.\d+)?) ms", "'cold:' line")
    cores = r.search(rel, r"(\d+) hardware threads", "'N hardware threads'")
    load = r.search(rel, r"load average at start (\d+(?:\.\d+)?)", "'load average at start'")
    return cold.group(1), cores.group(1), load.group(1)


def surrogate(r):
    rel = "h100/oracle.txt"
    models = r.search(
        rel, r"^# models: ensemble of (\d+) x ([\d,]+); member validation MSE "
        r"GEMM .*?\(mean (\d+(?:\.\d+)?)\), conv .*?\(mean (\d+(?:\.\d+)?)\)", "'# models:' line")
    members, hidden, gemm_mse, conv_mse = models.groups()
    single = r.search(rel, r"single [\d,]+ \(seed 1\) set top-1 (\d+(?:\.\d+)?)",
                      "single-network set top-1").group(1)
    median = r.search(
        rel, r"^median over (\d+) contexts: set top-1 (\d+(?:\.\d+)?), set top-10 (\d+(?:\.\d+)?).*?"
        r"whole range \(\d+ contexts\): top-1 (\d+(?:\.\d+)?), top-10 (\d+(?:\.\d+)?)", "'median over' line")
    contexts, set_t1, _, full_t1, full_t10 = median.groups()
    count = r.search(rel, r"--count (\d+)", "oracle plan --count").group(1)

    rel = "h100/train_gpu.txt"
    thesis = "64,128,192,256,192,128,64"
    text = r.text(rel)
    sections = re.split(r"^# bench/train_bench ", text, flags=re.M)
    thesis_mse, samples = {}, {}
    for s in sections:
        op = re.search(r"^# \S+: (\d+) ok (gemm|conv) samples", s, re.M)
        row = re.search(r"^" + re.escape(thesis) + r"\s+\d+\s+\d+\s+\d+\s+(\d+(?:\.\d+)?)", s, re.M)
        if op and row:
            samples[op.group(2)] = int(op.group(1))
            thesis_mse[op.group(2)] = row.group(1)
    for op in ("gemm", "conv"):
        if op not in thesis_mse:
            raise ResultsError(f"{rel}: no {thesis} row for {op}")
    cold_p50, cores, load = query_bench_cold(r)
    return fill(
        f"The H100 fp32 models shipped until ST (generator version 1, stale "
        f"since; the fp32 rows of the table below replaced them) were, for "
        f"each op, an ensemble of {number_word(members)} {hidden} networks "
        f"(`blocktune train --hidden {hidden} --members {members}`, seeds 1 to "
        f"{members}), whose mean ln(flop/s) is the prediction. Member validation "
        f"MSE: GEMM {gemm_mse} on average ({thousands(samples['gemm'])} samples), "
        f"convolution {conv_mse} ({thousands(samples['conv'])}); the thesis "
        f"architecture reaches {thesis_mse['gemm']} / {thesis_mse['conv']} alone "
        f"(`bench/results/h100/train_gpu.txt`). Against an oracle of {contexts} "
        f"unseen contexts × {thousands(count)} measured block shapes "
        f"(`bench/results/h100/oracle.txt`, re-run with `oracle_eval eval` without "
        f"a GPU): median top-1 {set_t1} of the best measured (one network: "
        f"{single}), {full_t1} over the whole range, top-10 re-benchmarked "
        f"{full_t10}. Averaging {number_word(members)} networks cancels much of "
        f"each one's error between near-equal block shapes. A query scores the "
        f"whole range with the first network and re-scores its best 512 with all "
        f"{number_word(members)}, so a cold query still costs about one network's "
        f"scoring: p50 {cold_p50} ms on {cores} CPU cores, load average {load} "
        f"(`bench/results/cpu/query_bench.txt`).")


def query_load(r):
    """The first (newest) load table of query_bench.txt."""
    rel = "cpu/query_bench.txt"
    text = r.text(rel)
    head = r.search(rel, r"^# query_bench, ([^;]+); .*$", "'# query_bench, DATE; MACHINE' line")
    rest = text[head.start():]
    cores = r.search(rel, r"(\d+) hardware threads", "'N hardware threads'").group(1)
    load = r.search(rel, r"load average at start (\d+(?:\.\d+)?)", "'load average at start'").group(1)
    block = re.search(r"^\| campaign \|.*\n\|[-|]+\|\n((?:\|.*\|\n?)+)", rest, re.M)
    if block is None:
        raise ResultsError(f"{rel}: no '| campaign | clients | ...' table")
    rows = []
    for line in block.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 9:
            raise ResultsError(f"{rel}: a table row has {len(cells)} cells: {line!r}")
        if len(cells) < 13:
            raise ResultsError(f"{rel}: a table row has {len(cells)} cells, not 13: {line!r}")
        campaign, threads, qps, p50, p99, longest, errors, _, rss = cells[:9]
        rss = " ".join(rss.replace("->", "→").split())
        rows.append(["no" if campaign == "idle" else "writing", threads, qps, p50,
                     p99, longest, errors, rss, cells[12]])
    target = r.search(rel, r"^target at 4 clients, idle: >= (\d+) queries/s \(ratio "
                      r"(\d+(?:\.\d+)?)\), p99 <= (\d+(?:\.\d+)?) ms \(ratio (\d+(?:\.\d+)?)\)",
                      "'target at 4 clients' line")
    fake = r.search(rel, r"(\d+) fake GPU\(s\)", "'N fake GPU(s)'").group(1)
    return (table(["campaign", "client threads", "queries/s", "p50 ms", "p99 ms",
                   "max ms", "errors", "daemon RSS MB", "samples/s"], rows)
            + "\n\n" + fill(
                f"Cached queries over TCP loopback; \"writing\": a campaign on {fake} "
                f"fake GPUs (`blocktuned --fake-gpus`) commits samples to the same "
                f"store meanwhile. {head.group(1)}, {cores} cores "
                f"shared with the benchmark's client threads (load average "
                f"{load} at the start; `bench/results/cpu/query_bench.txt` has the "
                f"command, CPU per query and the daemon's threads). Target at 4 "
                f"client threads with no campaign: >= {thousands(target.group(1))} "
                f"queries/s (measured / target {target.group(2)}) with p99 <= "
                f"{target.group(3)} ms (measured / target {target.group(4)})."))


# ---- bench/results/h100/eval/<precision>/headline.json -------------------

EVAL_PRECISIONS = ["bf16", "tf32", "fp32"]
EVAL_GROUPS = [  # (key, README label)
    ("square", "square GEMM 512 … 8192"),
    ("mlp", "MLP, N = 16"),
    ("cov", "covariance 64 × 64 × K"),
    ("conv56", "conv 3×3 56×56, C = K"),
    ("conv256", "conv 3×3 C = K = 256"),
    ("deepbench", "DeepBench GEMMs"),
    ("proj", "BERT-base projections"),
    ("prefill", "Llama-7B-class prefill"),
    ("decode", "LLM decode, N = 1–16"),
    ("resnet50_b1", "ResNet-50 3×3, batch 1"),
    ("resnet50_b32", "ResNet-50 3×3, batch 32"),
    ("resnet50_1x1_b1", "ResNet-50 1×1, batch 1"),
    ("resnet50_1x1_b32", "ResNet-50 1×1, batch 32"),
    ("odd", "odd sizes"),
    ("five thesis families", "**five thesis families**"),
    ("all shapes", "**all shapes**"),
]


class EvalHeadline:
    """One precision's headline.json (bench/eval/report.py)."""

    def __init__(self, r, precision):
        self.rel = f"h100/eval/{precision}/headline.json"
        try:
            self.data = json.loads(r.text(self.rel))
        except json.JSONDecodeError as e:
            raise ResultsError(f"{self.rel}: {e}")
        if self.data.get("precision") != precision or "groups" not in self.data:
            raise ResultsError(f"{self.rel}: not the {precision} headline")

    def group(self, key):
        g = self.data["groups"].get(key)
        if g is None:
            raise ResultsError(f"{self.rel}: no group {key!r}")
        return g


def x(v):
    return "-" if v is None else f"{v:.2f}×"


def verdict(ok):
    return "met" if ok else "**missed**"


def eval_table(r):
    rows = []
    for prec in EVAL_PRECISIONS:
        e = EvalHeadline(r, prec)
        a, t = e.group("all shapes"), e.data["targets"]
        top10, low, model = (a["vendor_over_top10_geomean"], a["vendor_over_top10_min"],
                             a["vendor_over_model_geomean"])
        rows.append([prec, a["shapes"],
                     f"{x(top10)} (≥ {t['geomean']}×: {verdict(top10 >= t['geomean'])})",
                     f"{x(low)} (≥ {t['floor']}×: {verdict(low >= t['floor'])})",
                     f"{x(model)} (≥ {t['model_geomean']}×: "
                     f"{verdict(model >= t['model_geomean'])})",
                     x(a["vendor_over_oracle_geomean"]), x(a["triton_over_top10_geomean"])])
    return table(["precision", "shapes", "vendor / top-10 (geomean)", "lowest",
                  "vendor / model only (geomean)", "vendor / oracle (geomean)",
                  "Triton / top-10"], rows)


def eval_groups(r):
    heads = [EvalHeadline(r, p) for p in EVAL_PRECISIONS]
    rows = []
    for key, label in EVAL_GROUPS:
        cells = [label]
        for e in heads:
            g = e.data["groups"].get(key)
            cells.append("-" if g is None else
                         f"{x(g['vendor_over_top10_geomean'])} ({g['shapes']})")
        rows.append(cells)
    return table(["group"] + [f"{p}: vendor / top-10 (shapes)" for p in EVAL_PRECISIONS],
                 rows)


def eval_quality(r):
    rows = []
    for prec in EVAL_PRECISIONS:
        e = EvalHeadline(r, prec)
        a, q = e.group("all shapes"), e.data["quality_targets"]
        share = a["model_within_5pct"] / a["shapes"]
        rows.append([prec,
                     f"{a['median_model_over_oracle']:.3f} (≥ {q['median_model']}: "
                     f"{verdict(a['median_model_over_oracle'] >= q['median_model'])})",
                     f"{a['median_top10_over_oracle']:.3f} (≥ {q['median_top10']}: "
                     f"{verdict(a['median_top10_over_oracle'] >= q['median_top10'])})",
                     f"{a['model_within_5pct']}/{a['shapes']} = {100 * share:.0f}% "
                     f"(≥ {100 * q['within_share']:.0f}%: {verdict(share >= q['within_share'])})"])
    return table(["precision", "median model-only / oracle", "median top-10 / oracle",
                  "model-only within 5% of oracle"], rows)


# ---- bench/results/h100/gemm_app.txt ------------------------------------

def gemm_app(r):
    rel = "h100/gemm_app.txt"
    m = r.search(rel, r"^\$ gemm_app --m 7168 --n 16 --k 7168 --layout NT\n(?:.+\n)+",
                 "'$ gemm_app --m 7168 --n 16 --k 7168 --layout NT' run")
    return "```\n" + m.group(0).rstrip("\n") + "\n```"


# ---- models/pretrained/<gpu>/models*.json.gz and cpu/families.tsv -------

FAMILIES = "cpu/families.tsv"  # blocktune families --json, one line a family
PRECISIONS = ["bf16", "fp16", "tf32", "fp32"]


def families_tsv(blocktune):
    """cpu/families.tsv as the binary `blocktune` lists its families."""
    try:
        out = subprocess.run([blocktune, "families", "--json"], check=True,
                             capture_output=True, text=True, timeout=60).stdout
        fams = json.loads(out)["families"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
        raise ResultsError(f"{blocktune} families --json: {e}") from e
    lines = ["# family\top\tprecisions\tversion\tmin_compute_capability"
             "  (blocktune families --json; scripts/readme_tables.py --blocktune"
             " BIN rewrites it)"]
    for f in fams:
        lines.append("\t".join([f["name"], f["op"], ",".join(f["precisions"]),
                                str(f["version"]), str(f["min_compute_capability"])]))
    return "\n".join(lines) + "\n"


def families(r):
    """[(name, op, [precisions], version, min_cc)] from cpu/families.tsv."""
    rows = []
    for n, line in enumerate(r.text(FAMILIES).splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 5 or not cols[3].isdigit() or not cols[4].isdigit():
            raise ResultsError(f"{FAMILIES}:{n}: not 'family op precisions "
                               f"version min_cc' (tabs): {line!r}")
        rows.append((cols[0], cols[1], cols[2].split(","), int(cols[3]), int(cols[4])))
    if not rows:
        raise ResultsError(f"{FAMILIES}: no family")
    return rows


@functools.lru_cache(maxsize=None)
def _models_file(path, mtime_ns, size):
    """The models of one models*.json.gz without their weights, read once
    per (path, mtime, size): the files are tens of MB, and the tests render
    the README many times in one process."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        models = json.load(f).get("models", [])
    slim = []
    for m in models:
        m = {k: v for k, v in m.items() if k not in ("weights", "normalization")}
        m["_metrics"] = json.loads(m["metrics_json"])
        for key in ("op", "dtype", "family", "generator_version",
                    "training_set", "device", "created_unix"):
            m[key]  # noqa: B018 (a KeyError names the field)
        slim.append(m)
    return tuple(slim)


def shipped_models(root):
    """{gpu folder: [model dict]} of every models*.json.gz under root, in
    the order an import stores them (a later model of the same device, op,
    precision and family replaces an earlier one)."""
    out = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("models*.json.gz")):
            rel = f"models/pretrained/{folder.name}/{path.name}"
            try:
                st = path.stat()
                models = _models_file(path, st.st_mtime_ns, st.st_size)
            except (OSError, ValueError, KeyError) as e:
                raise ResultsError(f"{rel}: not a models file: {e!r}") from e
            out.setdefault(folder.name, []).extend(dict(m, _file=rel) for m in models)
    if not out:
        raise ResultsError(f"{root}: no models*.json.gz")
    return out


def models(r):
    """A row per shipped model (the one an import keeps), then per GPU the
    (op, precision, family) that run on it and have no model."""
    fams = families(r)
    order = {f[0]: i for i, f in enumerate(fams)}
    version = {f[0]: f[3] for f in fams}
    rows, missing = [], []
    for folder, ms in shipped_models(r.models_root).items():
        kept, superseded = {}, 0
        for m in ms:
            key = (m["op"], m["dtype"], m["family"])
            superseded += key in kept
            kept[key] = m
        if not kept:
            continue
        dev = next(iter(kept.values()))["device"]
        gpu = dev["name"].replace("NVIDIA ", "").split()[0]
        cc = 10 * int(dev["cc_major"]) + int(dev["cc_minor"])
        have = set()
        for (op, dtype, fam), m in kept.items():
            op, prec = op[3:].lower(), dtype[6:].lower()
            have.add((op, prec, fam))
            mt = m["_metrics"]
            ok = re.search(r"\bok_samples=(\d+)", m["training_set"])
            members = re.search(r"\bmembers=(\d+)", m["training_set"])
            if fam not in version:
                raise ResultsError(f"{m['_file']}: family {fam} is not in {FAMILIES}")
            v = int(m["generator_version"])
            ver = f"v{v}" if v == version[fam] else f"v{v}, STALE (now v{version[fam]})"
            day = datetime.datetime.fromtimestamp(int(m["created_unix"]),
                                                  datetime.timezone.utc)
            rows.append(((gpu, ["gemm", "conv"].index(op), PRECISIONS.index(prec),
                          order[fam]),
                         [gpu, op, prec, f"{fam} ({ver})",
                          thousands(ok.group(1)) if ok else "?",
                          f"{float(mt['validation_mse']):.4f}",
                          f"{float(mt['spearman_validation']):.3f}",
                          (f"{float(mt['spearman_within_context_median']):.3f}"
                           if int(mt.get("contexts_ranked", 0)) > 0 else "-"),
                          f"{members.group(1) if members else 1} × {m['architecture']}",
                          day.strftime("%Y-%m-%d")]))
        gaps = []
        for prec in PRECISIONS:
            names = [name for name, op, precs, _, min_cc in fams
                     if min_cc <= cc and prec in precs and (op, prec, name) not in have]
            if names:
                gaps.append(f"{prec} {', '.join(names)}")
        note = f"{gpu}: " + ("; ".join(gaps) if gaps else "none")
        if superseded:
            note += (f" (and {superseded} model{'s' if superseded > 1 else ''} "
                     f"that a later one of the same family replaces on import, "
                     f"not in the table)")
        missing.append(note)
    rows.sort(key=lambda t: t[0])
    text = table(["GPU", "op", "precision", "family", "samples", "validation MSE",
                  "Spearman", "Spearman within contexts (median)", "networks",
                  "trained"], [r_ for _, r_ in rows])
    return text + "\n\n" + fill(
        f"Families that run on the GPU and have no shipped model there (a "
        f"query searches the families that have one; a campaign of the family "
        f"on that GPU and `scripts/train_pretrained.sh` add it; the list of "
        f"families is `bench/results/{FAMILIES}`, checked against `blocktune "
        f"families`). " + ". ".join(missing) + ".")


GENERATORS = {
    "kernel_ratios": kernel_ratios,
    "sampling": sampling,
    "campaigns": campaigns,
    "datasets": datasets,
    "surrogate": surrogate,
    "query_load": query_load,
    "eval_table": eval_table,
    "eval_groups": eval_groups,
    "eval_quality": eval_quality,
    "gemm_app": gemm_app,
    "models": models,
}


def render(readme, results):
    """README text with every region regenerated; raises ResultsError."""
    seen = []

    def replace(m):
        name = m.group("name")
        if name not in GENERATORS:
            raise ResultsError(f"README has a region {name!r} that no generator "
                               f"makes (known: {', '.join(GENERATORS)})")
        seen.append(name)
        body = GENERATORS[name](results).rstrip("\n")
        return f"<!-- generated: {name} -->\n{body}\n<!-- end generated -->"

    out = REGION.sub(replace, readme)
    missing = [n for n in GENERATORS if n not in seen]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if missing or twice:
        raise ResultsError(f"README regions: missing {missing}, repeated {twice}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 with a diff if README.md differs; write nothing")
    ap.add_argument("--readme", default=str(ROOT / "README.md"))
    ap.add_argument("--results", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--models", default=str(ROOT / "models" / "pretrained"),
                    help="the shipped models (models/pretrained)")
    ap.add_argument("--blocktune", metavar="BIN",
                    help=f"the CLI: its `families --json` must be {FAMILIES} "
                         f"(--check) or is written there")
    args = ap.parse_args(argv)
    path = pathlib.Path(args.readme)
    readme = path.read_text(encoding="utf-8")
    results = Results(args.results, args.models)
    diffs = []
    try:
        if args.blocktune:
            listed = families_tsv(args.blocktune)
            fam_path = results.root / FAMILIES
            committed = fam_path.read_text(encoding="utf-8") if fam_path.exists() else ""
            if listed != committed:
                if args.check:
                    diffs += difflib.unified_diff(
                        committed.splitlines(keepends=True), listed.splitlines(keepends=True),
                        fromfile=f"{fam_path} (as committed)",
                        tofile=f"{args.blocktune} families --json")
                else:
                    fam_path.write_text(listed, encoding="utf-8")
                    print(f"rewrote {fam_path}")
            results._cache[FAMILIES] = listed
        made = render(readme, results)
    except ResultsError as e:
        print(f"readme_tables: {e}", file=sys.stderr)
        return 2
    if made != readme:
        diffs += difflib.unified_diff(
            readme.splitlines(keepends=True), made.splitlines(keepends=True),
            fromfile=f"{path} (as committed)", tofile=f"{path} (from bench/results)")
    if not diffs and made == readme:
        return 0
    if args.check:
        sys.stdout.writelines(diffs)
        print("README.md or the families list differs from what bench/results/, "
              "models/pretrained/ and the CLI make: run scripts/readme_tables.py "
              "--blocktune build/client/blocktune", file=sys.stderr)
        return 1
    if made != readme:
        path.write_text(made, encoding="utf-8")
        print(f"rewrote the generated regions of {path}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
