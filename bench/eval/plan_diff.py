#!/usr/bin/env python3
"""Where two plans' top 1 differ, the times an evaluation measured for both.

  bench/eval/plan_diff.py OLD/plan.tsv NEW/plan.tsv RESULTS/eval-times.tsv.gz...
  bench/eval/plan_diff.py OLD/plan.tsv NEW/plan.tsv RESULTS  (every times file of it)

(several parts' eval-N-times.tsv.gz: each is read, header and all).

For every shape whose model-only answer (rank 1) changed between the
plans, the fastest time eval-times.tsv.gz holds for each answer (bench/eval
run.sh gpu times the plan's top 10, each family's top 3 and a random sweep,
so a new answer is often among them); the geomean of old / new over the
shapes where both were measured. A check without a GPU of what a change to
the query path's ranking does to the answers; the shapes whose new answer
was not measured are listed, not counted.
"""
import collections
import re
import statistics
import sys

import eval_times  # bench/eval/, the script's own folder


def strip(cfg):
    return re.sub(r'^(\S+) v\d+ ', r'\1 ', cfg)


def top1(path):
    out = {}
    for line in open(path):
        if line.startswith('#'):
            continue
        group, ctx, rank, cfg, _ = line.rstrip('\n').split('\t')
        if rank == '1':
            out[ctx] = strip(cfg)
    return out


def main():
    old, new = top1(sys.argv[1]), top1(sys.argv[2])
    times = collections.defaultdict(dict)
    for ctx, _, cfg, us, _ in eval_times.rows(eval_times.expand(sys.argv[3:])):
        cfg = strip(cfg)
        times[ctx][cfg] = min(float(us), times[ctx].get(cfg, float('inf')))
    timed = [c for c in old if c in times]
    changed, ratios = 0, []
    for ctx in timed:
        if old[ctx] == new.get(ctx):
            continue
        changed += 1
        to, tn = times[ctx].get(old[ctx]), times[ctx].get(new.get(ctx))
        if to and tn:
            ratios.append(to / tn)
            print('%-62s old %8.1f us  new %8.1f us  old/new %.3f'
                  % (ctx[:62], to, tn, to / tn))
        else:
            print('%-62s new answer not measured: %s' % (ctx[:62], new.get(ctx)))
    print('%d timed shapes, %d answers changed, %d of them measured both ways'
          % (len(timed), changed, len(ratios)))
    if ratios:
        print('old / new: geomean %.3f, faster on %d, slower on %d'
              % (statistics.geometric_mean(ratios), sum(r > 1 for r in ratios),
                 sum(r < 1 for r in ratios)))


if __name__ == '__main__':
    main()
