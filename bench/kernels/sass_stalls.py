#!/usr/bin/env python3
"""Where a kernel's warps wait, from ncu's per-SASS source page.

  bench/kernels/sass_stalls.py OURS-sass.csv.gz [VENDOR-sass.csv.gz ...]

Each file is what wgmma_profile_device.sh writes (`ncu --import R --page
source --csv --print-source sass`, gzipped). Prints, per file, the warp-stall
samples by reason and by opcode (shares of all samples), the warp
instructions executed by opcode, and the L2 sectors
and shared-memory wavefronts beyond the ideal (uncoalesced global accesses,
bank conflicts).
"""
import collections
import csv
import gzip
import sys


def number(text):
    try:
        return int(text.replace(',', ''))
    except ValueError:
        return 0


def summary(path):
    rows = list(csv.reader(gzip.open(path, 'rt')))
    header = rows[1]
    col = {name: i for i, name in enumerate(header)}
    reasons = [c for c in header if c.startswith('stall_') and '(Not' not in c]
    by_reason, by_opcode, totals = collections.Counter(), collections.Counter(), collections.Counter()
    executed = collections.Counter()
    for row in rows[2:]:
        if len(row) < len(header):
            continue
        words = row[col['Source']].split()
        if words and words[0].startswith('@'):
            words = words[1:]
        opcode = words[0].split('.')[0] if words else ''
        for reason in reasons:
            by_reason[reason[len('stall_'):]] += number(row[col[reason]])
        by_opcode[opcode] += number(row[col['Warp Stall Sampling (All Samples)']])
        executed[opcode] += number(row[col['Instructions Executed']])
        for name in ('L2 Theoretical Sectors Global Excessive', 'L2 Theoretical Sectors Global',
                     'L1 Wavefronts Shared Excessive', 'L1 Wavefronts Shared'):
            totals[name] += number(row[col[name]])
    samples = max(1, sum(by_reason.values()))
    share = lambda counter: ', '.join('%s %.1f%%' % (k, 100.0 * v / samples) for k, v in counter.most_common(8))
    print('%s: %d stall samples; L2 sectors %d beyond ideal of %d; shared wavefronts %d beyond ideal of %d' % (
        path, samples, totals['L2 Theoretical Sectors Global Excessive'], totals['L2 Theoretical Sectors Global'],
        totals['L1 Wavefronts Shared Excessive'], totals['L1 Wavefronts Shared']))
    print('  by reason: ' + share(by_reason))
    print('  by opcode: ' + share(by_opcode))
    warp_instructions = max(1, sum(executed.values()))
    print('  warp instructions executed: %d; FFMA %.1f%%; ' % (warp_instructions, 100.0 * executed['FFMA'] / warp_instructions) +
          ', '.join('%s %d' % (k, v) for k, v in executed.most_common(8)))


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        summary(p)
