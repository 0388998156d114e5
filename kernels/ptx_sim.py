#!/usr/bin/env python3
"""A small PTX interpreter for checking a generator's logic without a GPU.

It runs one entry of the PTX that blocktune's CUDA-core generators emit
(the instruction subset of kernels/gemm_ffma_k.cc: integer and fp32
arithmetic, predicates and branches, ld/st.global.f32, ld.shared.v4.f32,
ld/st.shared.f32, cp.async with a source size, commit/wait groups,
bar.sync; and for thread-block clusters %cluster_ctarank, mapa,
ld.shared::cluster.f32 and barrier.cluster) over a grid of programs, one
program (or one cluster of programs along z) at a time, its threads one
after another between barriers. It is a model, not a GPU: what it checks is the generator's
indexing, guards, stage ring and split of K, against a reference. Two
timings of cp.async bracket the hardware's:
  late   a copy lands only when cp.async.wait_group releases its group
         (reading a stage before waiting for it reads stale data);
  early  a copy lands when it is issued (overwriting a stage that another
         thread of the program still reads in this barrier interval
         corrupts it, as the threads run in a shuffled order).
Values are rounded to float32 after every operation (fma rounds once).

Used by kernels/ffma_k_sim_test.py; the real check is the GPU test
(tuner/gemm_gemv_gpu_test.cc).
"""
import random
import re
import struct

MASK = {16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def f32_of_bits(bits):
    return struct.unpack('f', struct.pack('I', bits & 0xFFFFFFFF))[0]


class PtxError(Exception):
    pass


def parse_entry(ptx, entry):
    m = re.search(r'\.entry\s+' + re.escape(entry) +
                  r'\s*\((.*?)\)\s*(?:\.reqnctapercluster[^{]*)?\{', ptx, re.S)
    if not m:
        raise PtxError('no entry ' + entry)
    params = re.findall(r'\.param\s+\.(\w+)\s+(\w+)', m.group(1))
    body_start = m.end()
    depth, i = 1, body_start
    while depth:
        c = ptx[i]
        depth += c == '{'
        depth -= c == '}'
        i += 1
    body = ptx[body_start:i - 1]
    code, labels = [], {}
    for raw in body.split('\n'):
        line = raw.split('//')[0].strip()
        if not line or line.startswith('.reg'):
            continue
        if line.endswith(':'):
            labels[line[:-1]] = len(code)
            continue
        line = line.rstrip(';').strip()
        pred = None
        if line.startswith('@'):
            p, line = line.split(None, 1)
            pred = (p[1:].startswith('!'), p.lstrip('@!'))
        op, _, rest = line.partition(' ')
        args = split_args(rest)
        code.append((pred, op, args))
    return params, code, labels


def split_args(rest):
    out, cur, depth = [], '', 0
    for c in rest:
        if c in '[{':
            depth += 1
        if c in ']}':
            depth -= 1
        if c == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


class Memory:
    """Global memory: 4-byte words by address."""

    def __init__(self):
        self.words = {}
        self.next = 1 << 20

    def alloc(self, values, align=256):
        base = (self.next + align - 1) // align * align
        for i, v in enumerate(values):
            self.words[base + 4 * i] = f32(v)
        self.next = base + 4 * max(len(values), 1) + 4096
        return base

    def load(self, addr):
        if addr % 4:
            raise PtxError('unaligned global load at %#x' % addr)
        if addr not in self.words:
            raise PtxError('global load out of bounds at %#x' % addr)
        return self.words[addr]

    def store(self, addr, v):
        if addr % 4 or addr not in self.words:
            raise PtxError('global store out of bounds at %#x' % addr)
        self.words[addr] = v


class Thread:
    def __init__(self, tid):
        self.tid = tid
        self.regs = {}
        self.pc = 0
        self.state = 'run'  # ready, run, bar, cbar (barrier.cluster), done
        self.pending = []   # committed groups of copies, oldest first
        self.open = []      # copies not yet committed


# mapa's addresses: the target program's rank + 1 above the low 24 bits
# (a shared address of its own), so that a plain ld.shared of one fails.
CLUSTER_SHIFT = 24


class Program:
    def __init__(self, code, labels, params, args, mem, ctaid, threads,
                 shared_bytes, mode, rng, rank=0):
        self.code, self.labels, self.mem = code, labels, mem
        self.ctaid, self.mode, self.rng = ctaid, mode, rng
        self.rank = rank
        self.grid = (1, 1, 1)  # %nctaid (run_grid sets it)
        self.cluster = [self]
        self.param = dict(zip([n for _, n in params], args))
        self.param_type = {n: t for t, n in params}
        # Shared memory starts as garbage (NaN): a read of a word never
        # written is caught by the reference check.
        self.shared = [float('nan')] * (shared_bytes // 4)
        self.threads = [Thread(t) for t in range(threads)]

    def val(self, t, a, kind='u'):
        if a.startswith('%'):
            if a in ('%tid.x',):
                return t.tid
            if a == '%tid.y' or a == '%tid.z':
                return 0
            if a.startswith('%ctaid.'):
                return self.ctaid['xyz'.index(a[-1])]
            if a.startswith('%nctaid.'):
                return self.grid['xyz'.index(a[-1])]
            if a == '%ntid.x':
                return len(self.threads)
            if a == '%cluster_ctarank':
                return self.rank
            if a not in t.regs:
                raise PtxError('read of unset register %s (thread %d, pc %d)'
                               % (a, t.tid, t.pc))
            return t.regs[a]
        if a == 'smem':
            return 0
        if a.startswith('0f'):
            return f32_of_bits(int(a[2:], 16))
        if kind == 'f':
            return float(a)
        return int(a, 0)

    def addr(self, t, a):
        inner = a.strip('[]')
        m = re.match(r'(%?\w+)\s*\+\s*(-?\d+)$', inner)
        if m:
            return self.val(t, m.group(1)) + int(m.group(2))
        return self.val(t, inner)

    def shared_index(self, addr, n):
        if addr % (4 * n) or addr < 0 or addr + 4 * n > 4 * len(self.shared):
            raise PtxError('shared access out of bounds or unaligned at %d'
                           % addr)
        return addr // 4

    def land(self, copies):
        for dst, data in copies:
            i = self.shared_index(dst, 4)
            self.shared[i:i + 4] = data

    def step(self, t):
        if t.pc >= len(self.code):
            raise PtxError('fell off the end')
        pred, op, a = self.code[t.pc]
        t.pc += 1
        if pred is not None:
            neg, p = pred
            if t.regs.get(p) is None:
                raise PtxError('unset predicate ' + p)
            if t.regs[p] == neg:
                return
        base = op.split('.')
        name = base[0]
        typ = base[-1]
        bits = int(re.sub(r'\D', '', typ) or 32) if typ[0] in 'usb' else 32
        mask = MASK.get(bits, MASK[32])
        R = t.regs
        v = lambda x, k='u': self.val(t, x, k)
        if op == 'ret':
            t.state = 'done'
        elif op == 'bar.sync':
            t.state = 'bar'
        elif op in ('barrier.cluster.arrive', 'barrier.cluster.arrive.release'):
            pass  # the wait that follows is the barrier
        elif op in ('griddepcontrol.launch_dependents', 'griddepcontrol.wait'):
            pass  # the grids run one after another here: the wait has waited
        elif op in ('barrier.cluster.wait', 'barrier.cluster.wait.acquire'):
            t.state = 'cbar'
        elif op == 'mapa.shared::cluster.u32':
            rank = v(a[2])
            if not 0 <= rank < len(self.cluster):
                raise PtxError('mapa to rank %d of a cluster of %d'
                               % (rank, len(self.cluster)))
            R[a[0]] = (rank + 1) << CLUSTER_SHIFT | v(a[1])
        elif op == 'ld.shared::cluster.f32':
            at = self.addr(t, a[1])
            rank = (at >> CLUSTER_SHIFT) - 1
            if not 0 <= rank < len(self.cluster):
                raise PtxError('ld.shared::cluster of %#x: not a mapa address'
                               % at)
            peer = self.cluster[rank]
            low = at & ((1 << CLUSTER_SHIFT) - 1)
            R[a[0]] = peer.shared[peer.shared_index(low, 1)]
        elif op in ('bra', 'bra.uni'):
            t.pc = self.labels[a[0]]
        elif name == 'ld' and base[1] == 'param':
            pname = a[1].strip('[]')
            R[a[0]] = self.param[pname]
        elif op == 'cvta.to.global.u64':
            R[a[0]] = v(a[1])
        elif op == 'cvt.u64.u32':
            R[a[0]] = v(a[1]) & MASK[32]
        elif name == 'mov':
            R[a[0]] = v(a[1], 'f' if typ == 'f32' else 'u')
        elif name in ('add', 'sub', 'mul', 'mad', 'min', 'max', 'and', 'shr',
                      'shl', 'div', 'rem') and typ == 'f32':
            x, y = v(a[1], 'f'), v(a[2], 'f')
            R[a[0]] = f32(x + y if name == 'add' else x - y if name == 'sub'
                          else x * y)
        elif name == 'fma':
            R[a[0]] = f32(v(a[1], 'f') * v(a[2], 'f') + v(a[3], 'f'))
        elif name == 'setp':
            cmp = base[1]
            if typ == 'f32':
                x, y = v(a[1], 'f'), v(a[2], 'f')
            else:
                x, y = v(a[1]), v(a[2])
                if typ[0] == 's':
                    x, y = signed(x, bits), signed(y, bits)
            r = {'lt': x < y, 'le': x <= y, 'gt': x > y, 'ge': x >= y,
                 'eq': x == y, 'ne': x != y}[cmp]
            if len(base) == 4 and base[2] == 'and':
                r = r and R[a[3]]
            R[a[0]] = r
        elif op == 'and.pred':
            R[a[0]] = R[a[1]] and R[a[2]]
        elif name in ('add', 'sub', 'min', 'max', 'and', 'shr', 'shl', 'div',
                      'rem', 'mul', 'mad'):
            x, y = v(a[1]), v(a[2])
            if typ[0] == 's':
                x, y = signed(x, bits), signed(y, bits)
            if name == 'add':
                r = x + y
            elif name == 'sub':
                r = x - y
            elif name == 'min':
                r = min(x, y)
            elif name == 'max':
                r = max(x, y)
            elif name == 'and':
                r = x & y
            elif name == 'shr':
                r = x >> y
            elif name == 'shl':
                r = x << y
            elif name == 'div':
                r = x // y
            elif name == 'rem':
                r = x % y
            elif name == 'mul':
                r = x * y
                if base[1] == 'wide':
                    mask = MASK[64]
            else:  # mad.lo
                r = x * y + v(a[3])
            R[a[0]] = r & mask
        elif op == 'ld.global.f32' or op.startswith('ld.global.nc'):
            R[a[0]] = self.mem.load(self.addr(t, a[1]))
        elif op == 'st.global.f32':
            self.mem.store(self.addr(t, a[0]), v(a[1], 'f'))
        elif op == 'st.global.v4.b32':  # gemm.ffma_kpk's pack entry
            regs = [r.strip() for r in a[1].strip('{}').split(',')]
            at = self.addr(t, a[0])
            if at % 16:
                raise PtxError('st.global.v4 to %#x: not 16-byte aligned' % at)
            for k, r in enumerate(regs):
                self.mem.store(at + 4 * k, v(r, 'f'))
        elif op == 'ld.shared.v4.f32':
            regs = [r.strip() for r in a[0].strip('{}').split(',')]
            i = self.shared_index(self.addr(t, a[1]), 4)
            for k, r in enumerate(regs):
                R[r] = self.shared[i + k]
        elif op == 'ld.shared.f32':
            R[a[0]] = self.shared[self.shared_index(self.addr(t, a[1]), 1)]
        elif op == 'st.shared.f32':
            self.shared[self.shared_index(self.addr(t, a[0]), 1)] = v(a[1], 'f')
        elif op == 'cp.async.cg.shared.global':
            dst, src = self.addr(t, a[0]), self.addr(t, a[1])
            size, nbytes = int(a[2]), v(a[3])
            if size != 16 or nbytes not in (0, 4, 8, 12, 16):
                raise PtxError('cp.async of %d with source size %d'
                               % (size, nbytes))
            data = [self.mem.load(src + 4 * k) if 4 * k < nbytes else 0.0
                    for k in range(4)]
            if self.mode == 'early':
                self.land([(dst, data)])
            else:
                t.open.append((dst, data))
        elif op == 'cp.async.commit_group':
            t.pending.append(t.open)
            t.open = []
        elif op == 'cp.async.wait_group':
            keep = int(a[0])
            while len(t.pending) > keep:
                self.land(t.pending.pop(0))
        else:
            raise PtxError('unmodelled instruction ' + op)


def signed(x, bits):
    return x - (1 << bits) if x >> (bits - 1) & 1 else x


def run_cluster(programs, rng, budget):
    """Runs the programs of one cluster to their end: every thread not
    waiting runs until it reaches a barrier (bar.sync: its program's
    threads; barrier.cluster.wait: every thread of the cluster) or returns,
    in a shuffled order, and then the barriers that every thread they wait
    for has reached release."""
    steps = 0
    threads = [t for p in programs for t in p.threads]
    owner = {id(t): p for p in programs for t in p.threads}
    for t in threads:
        t.state = 'ready'
    while True:
        order = [t for t in threads if t.state == 'ready']
        if not order:
            if all(t.state == 'done' for t in threads):
                return steps
            raise PtxError('deadlock: threads wait at barriers that cannot '
                           'release')
        rng.shuffle(order)
        for t in order:
            t.state = 'run'
            while t.state == 'run':
                steps += 1
                if steps > budget:
                    raise PtxError('step budget exhausted')
                owner[id(t)].step(t)
        for p in programs:
            states = {t.state for t in p.threads}
            if 'bar' in states and 'done' in states:
                raise PtxError('a thread left while others wait at a barrier')
            if 'bar' in states and 'cbar' in states:
                raise PtxError('threads of one program wait at different '
                               'barriers')
            if states == {'bar'}:
                for t in p.threads:
                    t.state = 'ready'
        if all(t.state == 'cbar' for t in threads):
            for t in threads:
                t.state = 'ready'
        elif any(t.state == 'cbar' for t in threads) and any(
                t.state == 'done' for t in threads):
            raise PtxError('a thread left while others wait at a cluster '
                           'barrier')


def cluster_dims(ptx, entry):
    """The entry's .reqnctapercluster (x, y, z); (1, 1, 1) without one."""
    m = re.search(r'\.entry\s+' + re.escape(entry) + r'\s*\(.*?\)\s*'
                  r'\.reqnctapercluster\s+(\d+)\s*,\s*(\d+)\s*,\s*(\d+)',
                  ptx, re.S)
    return tuple(int(x) for x in m.groups()) if m else (1, 1, 1)


def run_grid(ptx, entry, args, mem, grid, block, shared_bytes, mode, seed=1):
    """Runs `entry` over `grid`; clusters (the PTX's .reqnctapercluster)
    only along z."""
    params, code, labels = parse_entry(ptx, entry)
    cx, cy, cluster_z = cluster_dims(ptx, entry)
    if cx != 1 or cy != 1:
        raise PtxError('clusters along x or y are not modelled')
    if len(params) != len(args):
        raise PtxError('%d arguments for %d parameters' % (len(args),
                                                           len(params)))
    if grid[2] % cluster_z:
        raise PtxError('grid z %d is no multiple of the cluster %d'
                       % (grid[2], cluster_z))
    rng = random.Random(seed)
    steps = 0
    for z0 in range(0, grid[2], cluster_z):
        for y in range(grid[1]):
            for x in range(grid[0]):
                progs = [Program(code, labels, params, args, mem,
                                 (x, y, z0 + r), block[0], shared_bytes, mode,
                                 rng, rank=r) for r in range(cluster_z)]
                for prog in progs:
                    prog.cluster = progs
                    prog.grid = tuple(grid)
                steps += run_cluster(progs, rng, 50_000_000)
    return steps
