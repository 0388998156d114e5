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
                 shared_bytes, mode, rng, rank=0, fns=None):
        self.code, self.labels, self.mem = code, labels, mem
        self.fns = fns if fns is not None else [None] * len(code)
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
        pc = t.pc
        fn = self.fns[pc]
        if fn is None:  # decoded on first use, shared by the grid's programs
            fn = self.fns[pc] = compile_instruction(*self.code[pc], self.labels)
        t.pc = pc + 1
        fn(self, t)


def operand(a, kind='u'):
    """A getter (program, thread) -> value of operand text `a`."""
    if a.startswith('%'):
        if a == '%tid.x':
            return lambda p, t: t.tid
        if a in ('%tid.y', '%tid.z'):
            return lambda p, t: 0
        if a.startswith('%ctaid.'):
            i = 'xyz'.index(a[-1])
            return lambda p, t: p.ctaid[i]
        if a.startswith('%nctaid.'):
            i = 'xyz'.index(a[-1])
            return lambda p, t: p.grid[i]
        if a == '%ntid.x':
            return lambda p, t: len(p.threads)
        if a == '%cluster_ctarank':
            return lambda p, t: p.rank

        def reg(p, t):
            try:
                return t.regs[a]
            except KeyError:
                raise PtxError('read of unset register %s (thread %d, pc %d)'
                               % (a, t.tid, t.pc)) from None
        return reg
    if a == 'smem':
        c = 0
    elif a.startswith('0f'):
        c = f32_of_bits(int(a[2:], 16))
    elif kind == 'f':
        c = float(a)
    else:
        c = int(a, 0)
    return lambda p, t: c


def address(a):
    """A getter of the byte address of `[reg]`, `[reg + off]` or `[name]`."""
    inner = a.strip('[]')
    m = re.match(r'(%?\w+)\s*\+\s*(-?\d+)$', inner)
    if m:
        base, off = operand(m.group(1)), int(m.group(2))
        return lambda p, t: base(p, t) + off
    return operand(inner)


def compile_instruction(pred, op, a, labels):
    """The instruction as a function (program, thread) that executes it
    (the thread's pc already past it); decoding once instead of at every
    step is what makes the interpreter fast enough for CI."""
    fn = _compile(op, a, labels)
    if pred is None:
        return fn
    neg, pname = pred

    def predicated(p, t):
        v = t.regs.get(pname)
        if v is None:
            raise PtxError('unset predicate ' + pname)
        if v != neg:
            fn(p, t)
    return predicated


def _compile(op, a, labels):
    base = op.split('.')
    name = base[0]
    typ = base[-1]
    bits = int(re.sub(r'\D', '', typ) or 32) if typ[0] in 'usb' else 32
    mask = MASK.get(bits, MASK[32])
    if op == 'ret':
        def fn(p, t):
            t.state = 'done'
    elif op == 'bar.sync':
        def fn(p, t):
            t.state = 'bar'
    elif op in ('barrier.cluster.arrive', 'barrier.cluster.arrive.release',
                'griddepcontrol.launch_dependents', 'griddepcontrol.wait'):
        # The wait that follows is the cluster barrier; the grids run one
        # after another here: griddepcontrol's wait has waited.
        def fn(p, t):
            pass
    elif op in ('barrier.cluster.wait', 'barrier.cluster.wait.acquire'):
        def fn(p, t):
            t.state = 'cbar'
    elif op == 'mapa.shared::cluster.u32':
        d, x, r = a[0], operand(a[1]), operand(a[2])

        def fn(p, t):
            rank = r(p, t)
            if not 0 <= rank < len(p.cluster):
                raise PtxError('mapa to rank %d of a cluster of %d'
                               % (rank, len(p.cluster)))
            t.regs[d] = (rank + 1) << CLUSTER_SHIFT | x(p, t)
    elif op == 'ld.shared::cluster.f32':
        d, at_of = a[0], address(a[1])

        def fn(p, t):
            at = at_of(p, t)
            rank = (at >> CLUSTER_SHIFT) - 1
            if not 0 <= rank < len(p.cluster):
                raise PtxError('ld.shared::cluster of %#x: not a mapa address'
                               % at)
            peer = p.cluster[rank]
            low = at & ((1 << CLUSTER_SHIFT) - 1)
            t.regs[d] = peer.shared[peer.shared_index(low, 1)]
    elif op in ('bra', 'bra.uni'):
        label = a[0]

        def fn(p, t):
            t.pc = labels[label]
    elif name == 'ld' and base[1] == 'param':
        d, pname = a[0], a[1].strip('[]')

        def fn(p, t):
            t.regs[d] = p.param[pname]
    elif op == 'cvta.to.global.u64':
        d, x = a[0], operand(a[1])

        def fn(p, t):
            t.regs[d] = x(p, t)
    elif op == 'cvt.u64.u32':
        d, x = a[0], operand(a[1])

        def fn(p, t):
            t.regs[d] = x(p, t) & MASK[32]
    elif name == 'mov':
        d, x = a[0], operand(a[1], 'f' if typ == 'f32' else 'u')

        def fn(p, t):
            t.regs[d] = x(p, t)
    elif name in ('add', 'sub', 'mul', 'mad', 'min', 'max', 'and', 'shr',
                  'shl', 'div', 'rem') and typ == 'f32':
        d, x, y = a[0], operand(a[1], 'f'), operand(a[2], 'f')
        f = {'add': lambda u, v: u + v, 'sub': lambda u, v: u - v}.get(
            name, lambda u, v: u * v)

        def fn(p, t):
            t.regs[d] = f32(f(x(p, t), y(p, t)))
    elif name == 'fma':
        d, x, y, z = a[0], operand(a[1], 'f'), operand(a[2], 'f'), operand(a[3], 'f')

        def fn(p, t):
            t.regs[d] = f32(x(p, t) * y(p, t) + z(p, t))
    elif name == 'setp':
        cmp = {'lt': lambda u, v: u < v, 'le': lambda u, v: u <= v,
               'gt': lambda u, v: u > v, 'ge': lambda u, v: u >= v,
               'eq': lambda u, v: u == v, 'ne': lambda u, v: u != v}[base[1]]
        is_f = typ == 'f32'
        is_signed = not is_f and typ[0] == 's'
        d = a[0]
        x, y = operand(a[1], 'f' if is_f else 'u'), operand(a[2], 'f' if is_f else 'u')
        also = a[3] if len(base) == 4 and base[2] == 'and' else None

        def fn(p, t):
            u, v = x(p, t), y(p, t)
            if is_signed:
                u, v = signed(u, bits), signed(v, bits)
            r = cmp(u, v)
            if also is not None:
                r = r and t.regs[also]
            t.regs[d] = r
    elif op == 'and.pred':
        d, x, y = a

        def fn(p, t):
            t.regs[d] = t.regs[x] and t.regs[y]
    elif name in ('add', 'sub', 'min', 'max', 'and', 'shr', 'shl', 'div',
                  'rem', 'mul', 'mad'):
        d, x, y = a[0], operand(a[1]), operand(a[2])
        is_signed = typ[0] == 's'
        if name == 'mul' and base[1] == 'wide':
            mask = MASK[64]
        if name == 'mad':
            z = operand(a[3])
            f = lambda u, v, p, t: u * v + z(p, t)  # mad.lo
        else:
            g = {'add': lambda u, v: u + v, 'sub': lambda u, v: u - v,
                 'min': min, 'max': max, 'and': lambda u, v: u & v,
                 'shr': lambda u, v: u >> v, 'shl': lambda u, v: u << v,
                 'div': lambda u, v: u // v, 'rem': lambda u, v: u % v,
                 'mul': lambda u, v: u * v}[name]
            f = lambda u, v, p, t: g(u, v)

        def fn(p, t):
            u, v = x(p, t), y(p, t)
            if is_signed:
                u, v = signed(u, bits), signed(v, bits)
            t.regs[d] = f(u, v, p, t) & mask
    elif op == 'ld.global.f32' or op.startswith('ld.global.nc'):
        d, at = a[0], address(a[1])

        def fn(p, t):
            t.regs[d] = p.mem.load(at(p, t))
    elif op == 'st.global.f32':
        at, x = address(a[0]), operand(a[1], 'f')

        def fn(p, t):
            p.mem.store(at(p, t), x(p, t))
    elif op == 'st.global.v4.b32':  # gemm.ffma_kpk's pack entry
        at_of = address(a[0])
        xs = [operand(r.strip(), 'f') for r in a[1].strip('{}').split(',')]

        def fn(p, t):
            at = at_of(p, t)
            if at % 16:
                raise PtxError('st.global.v4 to %#x: not 16-byte aligned' % at)
            for k, x in enumerate(xs):
                p.mem.store(at + 4 * k, x(p, t))
    elif op == 'ld.shared.v4.f32':
        regs = [r.strip() for r in a[0].strip('{}').split(',')]
        at = address(a[1])

        def fn(p, t):
            i = p.shared_index(at(p, t), 4)
            for k, r in enumerate(regs):
                t.regs[r] = p.shared[i + k]
    elif op == 'ld.shared.f32':
        d, at = a[0], address(a[1])

        def fn(p, t):
            t.regs[d] = p.shared[p.shared_index(at(p, t), 1)]
    elif op == 'st.shared.f32':
        at, x = address(a[0]), operand(a[1], 'f')

        def fn(p, t):
            p.shared[p.shared_index(at(p, t), 1)] = x(p, t)
    elif op == 'cp.async.cg.shared.global':
        dst_of, src_of, size, nbytes_of = (address(a[0]), address(a[1]),
                                           int(a[2]), operand(a[3]))

        def fn(p, t):
            dst, src, nbytes = dst_of(p, t), src_of(p, t), nbytes_of(p, t)
            if size != 16 or nbytes not in (0, 4, 8, 12, 16):
                raise PtxError('cp.async of %d with source size %d'
                               % (size, nbytes))
            data = [p.mem.load(src + 4 * k) if 4 * k < nbytes else 0.0
                    for k in range(4)]
            if p.mode == 'early':
                p.land([(dst, data)])
            else:
                t.open.append((dst, data))
    elif op == 'cp.async.commit_group':
        def fn(p, t):
            t.pending.append(t.open)
            t.open = []
    elif op == 'cp.async.wait_group':
        keep = int(a[0])

        def fn(p, t):
            while len(t.pending) > keep:
                p.land(t.pending.pop(0))
    else:
        def fn(p, t):
            raise PtxError('unmodelled instruction ' + op)
    return fn


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
    fns = [None] * len(code)
    steps = 0
    for z0 in range(0, grid[2], cluster_z):
        for y in range(grid[1]):
            for x in range(grid[0]):
                progs = [Program(code, labels, params, args, mem,
                                 (x, y, z0 + r), block[0], shared_bytes, mode,
                                 rng, rank=r, fns=fns) for r in range(cluster_z)]
                for prog in progs:
                    prog.cluster = progs
                    prog.grid = tuple(grid)
                steps += run_cluster(progs, rng, 50_000_000)
    return steps
