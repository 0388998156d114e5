#!/usr/bin/env python3
"""Scores other rankings of the evaluation's candidates offline.

The evaluation times the plan's top 10 of every shape (the query path's
answer), each family's own top answers (eval_plan --family-top, timed in
full beside them) and a sweep (bench/eval/run.sh gpu writes every time to
eval-times.tsv.gz). A top-k policy re-benchmarks k candidates and answers the
fastest: this script takes each policy's k candidates from the plan files,
looks their times up in eval-times.tsv.gz and prints, per policy, the
geomean of vendor time (report.py's) / the policy's pick over the shapes,
and the shapes where it differs from the plan's top 10. The picks' times are
the first ones (eval-times.tsv.gz), not the summary's re-timing of each pick,
so the plan policy's geomean here is not the summary's top-10 figure; compare
the policies with each other.

  bench/eval/rescore.py bench/results/h100/eval/bf16 [--k 10]

(an evaluation timed in parts: every part's eval-N-times.tsv.gz.)

Policies:
  plan      the plan's top k (what the evaluation reports as top-10);
  families  every family's own best (its rank 1) first, then the rest of the
            union of the plan's and the families' answers by predicted time,
            k in all: one optimistic model cannot fill the list.
"""
import argparse
import math
import os
import sys

import eval_times  # bench/eval/, the script's own folder


def read_plan(path):
    """{(group, context): [(config, predicted_s, rank)]} in file order."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            group, context, rank, config, predicted = line.rstrip("\n").split("\t")
            out.setdefault((group, context), []).append(
                (config, float(predicted), int(rank)))
    return out


def read_times(paths):
    """{(context, config): us}, the fullest timing of each."""
    times = {}
    for context, source, config, us, launches in eval_times.rows(paths):
        us = float(us)
        if math.isnan(us):
            continue
        key = (context, config)
        n = int(launches)
        if key not in times or n > times[key][1]:
            times[key] = (us, n)
    return {k: v[0] for k, v in times.items()}


def family_of(config):
    return config.split(" ", 1)[0]


def policy_plan(top, fam, k):
    return [c for c, _, _ in top[:k]]


def policy_families(top, fam, k):
    chosen = []
    firsts = sorted((p, c) for c, p, r in fam if r == 1)
    for _, c in firsts:
        if c not in chosen and len(chosen) < k:
            chosen.append(c)
    union = sorted({(p, c) for c, p, _ in top + fam})
    for _, c in union:
        if len(chosen) >= k:
            break
        if c not in chosen:
            chosen.append(c)
    return chosen


POLICIES = {"plan": policy_plan, "families": policy_families}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="one precision's evaluation directory")
    ap.add_argument("--k", type=int, default=10, help="candidates re-benchmarked")
    a = ap.parse_args()
    d = a.results
    plan = read_plan(os.path.join(d, "plan.tsv"))
    fams = read_plan(os.path.join(d, "plan-families.tsv"))
    times = read_times(eval_times.paths_of(d))
    # The vendor as report.py takes it (a convolution's: the faster of
    # cudnnFind and PyTorch's cuDNN).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import report  # noqa: E402
    vendor = {}
    for r in report.read_rows(d)[0]:
        if math.isfinite(r["vendor_us"]):
            vendor[(r["group"], r["context"])] = (r["vendor_us"], r["shape"])
    if not fams:
        print(f"{d}: no plan-families.tsv; only the plan's policy", file=sys.stderr)
    picks = {name: {} for name in POLICIES}
    for key, top in plan.items():
        if key not in vendor:
            continue
        for name, policy in POLICIES.items():
            cands = policy(top, fams.get(key, []), a.k)
            timed = [(times[(key[1], c)], c) for c in cands if (key[1], c) in times]
            if timed:
                picks[name][key] = min(timed)
    keys = [k for k in vendor if all(k in picks[n] for n in POLICIES)]
    print(f"{d}: {len(keys)} shapes with every policy's pick timed (k = {a.k})")
    for name in POLICIES:
        g = math.exp(sum(math.log(vendor[k][0] / picks[name][k][0]) for k in keys) / len(keys))
        lo = min(keys, key=lambda k: vendor[k][0] / picks[name][k][0])
        print(f"  {name:9s} geomean vendor/pick {g:.3f}x, lowest "
              f"{vendor[lo][0] / picks[name][lo][0]:.2f}x ({lo[0]} {vendor[lo][1]})")
    for name in POLICIES:
        if name == "plan":
            continue
        for k in keys:
            a_us, b_us = picks["plan"][k][0], picks[name][k][0]
            if abs(a_us - b_us) > 0.01 * a_us:
                print(f"  {name}: {k[0]:12s} {vendor[k][1]:32s} plan {a_us:8.1f} us -> "
                      f"{b_us:8.1f} us ({family_of(picks[name][k][1])})")


if __name__ == "__main__":
    main()
