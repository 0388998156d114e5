import gzip, sys, re, collections, math
times = sys.argv[1]   # eval-kpf-times.tsv.gz
rows = []
op = gzip.open if times.endswith('.gz') else open
with op(times, 'rt') as f:
    for line in f:
        p = line.rstrip('\n').split('\t')
        if len(p) < 4 or p[0] == 'context': continue
        try: us = float(p[3])
        except ValueError: continue
        rows.append((p[0], p[2], us))
by = collections.defaultdict(dict)
for ctx, cfg, us in rows:
    by[ctx][cfg] = min(us, by[ctx].get(cfg, 1e18))
def key(cfg):
    return re.sub(r'^gemm\.ffma_kpf v1 | PF=\d+ PG=\d+$', '', re.sub(r'^gemm\.ffma_k v5 ', '', cfg))
gains = collections.defaultdict(list)
print('%-48s %9s %9s %7s  %s' % ('context', 'best_k', 'best_kpf', 'ratio', 'best kpf config'))
for ctx in sorted(by, key=lambda c: (c.split()[3], c)):
    d = by[ctx]
    k = {c: u for c, u in d.items() if c.startswith('gemm.ffma_k v5')}
    f = {c: u for c, u in d.items() if c.startswith('gemm.ffma_kpf')}
    if not k or not f: continue
    bk = min(k.values()); bf = min(f, key=f.get)
    print('%-48s %9.2f %9.2f %7.3f  %s' % (ctx[:48], bk, f[bf], bk / f[bf], bf[17:]))
    for c, u in f.items():
        base = 'gemm.ffma_k v5 ' + key(c)
        if base in k:
            pf = re.search(r'PF=(\d+) PG=(\d+)', c).groups()
            gains['PF=%s PG=%s' % pf].append(k[base] / u)
print()
for g, v in sorted(gains.items()):
    print('%-12s n=%3d geomean base/kpf %.3f  min %.3f max %.3f' % (g, len(v), math.exp(sum(map(math.log, v)) / len(v)), min(v), max(v)))
