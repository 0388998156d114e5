#!/usr/bin/env python3
"""An evaluation's measured candidates as oracle_eval results.

bench/eval/run.sh gpu keeps every timed candidate of every shape in
eval-times.tsv.gz (the plan's top 10, each family's own top answers and a
random sweep of each family). This writes those of one op in the format of
oracle_run's output (context, "family params", ok, seconds) and the contexts
one per line, so that `oracle_eval eval` scores any models on them offline:
the models' top 1 among the measured configurations over the best of them.

  bench/eval/times_to_results.py RESULTS/eval-times.tsv.gz... out.tsv out.ctx gemm
  bench/eval/times_to_results.py RESULTS out.tsv out.ctx gemm

(an evaluation timed in several calls: every part's eval-N-times.tsv.gz,
each read with its header, as bench/eval/plan_diff.py does; a results
folder stands for all of its times files, eval_times.paths_of).
  build/bench/oracle_eval eval --contexts out.ctx --dtype bf16 \
      --models models.json.gz --results out.tsv
"""
import re, sys

import eval_times  # bench/eval/, the script's own folder
if len(sys.argv) < 5:
    sys.exit('usage: bench/eval/times_to_results.py TIMES.tsv.gz...|RESULTS out.tsv out.ctx OP')
*srcs, out_res, out_ctx, op = sys.argv[1:]
ctxs = []
with open(out_res, 'w') as o:
    for c, s, cfg, us, n in eval_times.rows(eval_times.expand(srcs)):
        if not c.startswith(op + ' '):
            continue
        cfg = re.sub(r'^(\S+) v\d+ ', r'\1 ', cfg)
        o.write(f"{c}\t{cfg}\tok\t{float(us) * 1e-6:.6e}\n")
        if c not in ctxs:
            ctxs.append(c)
open(out_ctx, 'w').write('\n'.join(ctxs) + '\n')
print(len(ctxs), 'contexts')
