#!/usr/bin/env python3
"""The model-only answers of a plan, scored on an evaluation's measurements.

For every shape of PLAN (eval_plan's plan.tsv; rank 1 is the query path's
model-only answer), the fastest time the evaluation measured for that
configuration (any part, any source: top 10, family top 3, sweep) against
the fastest time it measured for any configuration of the shape; counts the
shapes within 5% and prints the misses. A check without a GPU of what a
retrained model does to the model-only answers, where its answers are among
the measured configurations (the others are listed as unmeasured). Its bar
is stricter than report.py's (the best of every timing of a shape, not of
one run), so compare plans with each other, not with summary.md.

  bench/eval/model_only_score.py PLAN.tsv RESULTS_DIR|TIMES.tsv.gz... [--op gemm]
"""
import argparse
import collections
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval_times  # noqa: E402  (bench/eval/, the script's own folder)


def strip(cfg):
    return re.sub(r'^(\S+) v\d+ ', r'\1 ', cfg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('plan')
    ap.add_argument('times', nargs='+')
    ap.add_argument('--op', default='gemm', choices=['gemm', 'conv'])
    args = ap.parse_args()

    best = collections.defaultdict(lambda: float('inf'))
    timed = collections.defaultdict(dict)  # context -> config -> fastest us
    for ctx, _, cfg, us, _ in eval_times.rows(eval_times.expand(args.times)):
        cfg, us = strip(cfg), float(us)
        best[ctx] = min(best[ctx], us)
        timed[ctx][cfg] = min(timed[ctx].get(cfg, float('inf')), us)

    shapes = within = 0
    ratios = []
    for line in open(args.plan):
        if line.startswith('#'):
            continue
        _, ctx, rank, cfg, _ = line.rstrip('\n').split('\t')
        if rank != '1' or not ctx.startswith(args.op + ' '):
            continue
        shapes += 1
        cfg = strip(cfg)
        if cfg not in timed[ctx]:
            print('unmeasured', ctx, cfg)
            continue
        q = best[ctx] / timed[ctx][cfg]
        ratios.append(q)
        within += q >= 1 / 1.05
        if q < 1 / 1.05:
            print(f'miss {q:.3f} {ctx} {cfg}')
    if not ratios:
        sys.exit('no measured answer')
    print(f'{shapes} {args.op} shapes: rank 1 measured on {len(ratios)}; within 5% of '
          f'the best measured on {within}; median {statistics.median(ratios):.3f}; '
          f'geomean {statistics.geometric_mean(ratios):.4f}')


if __name__ == '__main__':
    main()
