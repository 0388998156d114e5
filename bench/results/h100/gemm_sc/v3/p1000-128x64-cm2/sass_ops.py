import csv, gzip, sys, collections
def load(path):
    rows = list(csv.reader(gzip.open(path, 'rt')))
    hdr = rows[1]; data = rows[2:]
    iS = hdr.index('Source'); iE = hdr.index('Instructions Executed'); iW = hdr.index('Warp Stall Sampling (All Samples)')
    ops = collections.Counter(); stalls = collections.Counter(); total = 0; ts = 0
    for r in data:
        src = r[iS].strip(); n = int(r[iE] or 0); w = int(r[iW] or 0)
        op = src.split()[0]
        if op.startswith('@'): op = src.split()[1]
        op = op.split('.')[0]
        ops[op] += n; stalls[op] += w; total += n; ts += w
    return ops, stalls, total, ts
o, os_, ot, ots = load(sys.argv[1]); v, vs, vt, vts = load(sys.argv[2])
print('total instr', ot, vt, 'samples', ots, vts)
for op in sorted(set(o) | set(v), key=lambda k: -(o[k] + v[k]))[:30]:
    print(f'{op:12s} {o[op]:9d} {v[op]:9d}   stall samples {os_[op]:6d} {vs[op]:6d}')
