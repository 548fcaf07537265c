"""Line-level simulation of the GH100 L2 for the L2 probe's streams (tests/gpu_l2_probe.cu).

Geometry: two partitions of C/2, 128-byte lines, `ways`-way sets (n_sets = C/2/128/ways per
partition), a line's home partition and set from a hash of its address. The SM of block b is
b mod 132, its side (partition) sm mod 2 (as analysis/l2_sim.cpp). Reads look up the near
partition, then home, and leave a clean near copy; writes are done at home, a near copy stays
(the writer's-copy rule); a line written is dirty at home. Capacity: LRU per set (or per
partition, `assoc='full'`); a dirty line evicted is written back.

Dirty policies (`Policy`):
  cap      share of a partition's lines that may be dirty (the single write's plateau)
  victim   'global': past the cap the partition's least recently written dirty line is written
           back (analysis/l2_sim.cpp's rule); 'set': the least recently written dirty line of the
           set being written (other than the line itself)
  t1, p    below the cap and above t1 (a share of the partition), a write (any write: clean or
           dirty line) writes back, with probability p, a victim chosen as above
  dset     a per-set limit: at most dset dirty lines in a set (LRW of the set written back)
  lo       hysteresis: past the cap clean (victim order as above) down to lo
Written-back lines stay, clean.
"""
import random
from collections import OrderedDict

LINE = 128
SMS = 132


class Policy:
    def __init__(self, name, cap=0.455, victim='set', t1=None, p=0.0, dset=None, lo=None,
                 trigger='write', q=0.25):
        self.q = q
        self.name, self.cap, self.victim, self.t1, self.p, self.dset, self.lo = name, cap, victim, t1, p, dset, lo
        self.trigger = trigger  # 'write': any write counts; 'new': only clean -> dirty writes

    def __repr__(self):
        return self.name


class L2:
    def __init__(self, l2_bytes, nlines, ways, policy, hash_kind='random', assoc='set', seed=1):
        self.policy = policy
        self.ways = ways
        part_lines = l2_bytes // 2 // LINE
        self.part_lines = part_lines
        self.nsets = max(1, part_lines // ways)
        rng = random.Random(seed)
        self.rng = random.Random(seed + 7)
        n = nlines
        # home partition and set of every line
        if hash_kind == 'random':
            self.home = bytearray(rng.getrandbits(1) for _ in range(n))
            self.set_of = [rng.randrange(self.nsets) for _ in range(n)]
        elif hash_kind == 'even':
            # each aligned group of 2 lines: one per partition (random which); per partition the
            # k-th home line goes to set perm_r[k mod nsets] for row r = k // nsets (a fresh
            # permutation per row): every set gets floor/ceil of the load, at random places.
            home = bytearray(n)
            for g in range(0, n, 2):
                b = rng.getrandbits(1)
                home[g] = b
                if g + 1 < n:
                    home[g + 1] = 1 - b
            self.home = home
            set_of = [0] * n
            cnt = [0, 0]
            perms = [{}, {}]
            for i in range(n):
                h = home[i]
                k = cnt[h]
                cnt[h] += 1
                r, j = divmod(k, self.nsets)
                pr = perms[h].get(r)
                if pr is None:
                    pr = list(range(self.nsets))
                    rng.shuffle(pr)
                    perms[h][r] = pr
                set_of[i] = pr[j]
            self.set_of = set_of
        else:
            raise ValueError(hash_kind)
        self.assoc = assoc
        if assoc == 'full':
            self.nsets_cap = 1
        self.present = [bytearray(n), bytearray(n)]
        self.dirty = [bytearray(n), bytearray(n)]
        # LRU per set (list: LRU first), or per partition (dict: insertion order, LRU first)
        if assoc == 'set':
            self.lru = [[[] for _ in range(self.nsets)] for _ in range(2)]
        else:
            self.lru = [dict(), dict()]
        self.dl = [[[] for _ in range(self.nsets)] for _ in range(2)]  # dirty lines per set, LRW first
        self.gdl = [OrderedDict(), OrderedDict()]  # dirty lines per partition, LRW first (global victims)
        self.ndirty = [0, 0]
        self.cap = int(policy.cap * part_lines) if policy.cap else None
        self.t1 = int(policy.t1 * part_lines) if policy.t1 is not None else None
        self.lo = int(policy.lo * part_lines) if policy.lo is not None else None
        self.rd = 0
        self.wr = 0
        self.acc = [0.0, 0.0]  # deterministic rate accumulator per partition
        # sampled victims: per partition a Fenwick tree over write stamps (1 = a live dirty entry)
        self.maxstamp = 4 * n + 16
        self.fen = [[0] * (self.maxstamp + 1), [0] * (self.maxstamp + 1)]
        self.stamp_line = [[0] * (self.maxstamp + 1), [0] * (self.maxstamp + 1)]
        self.stamp_of = [[0] * n, [0] * n]
        self.now = [0, 0]
        self.q = getattr(policy, 'q', 0.25)
        self.LOG = 1 << (self.maxstamp.bit_length())

    # --- dirty bookkeeping
    def _fadd(self, p, k, v):
        f = self.fen[p]
        m = self.maxstamp
        while k <= m:
            f[k] += v
            k += k & -k

    def _fkth(self, p, k):
        """stamp of the k-th (1-based) live entry"""
        f = self.fen[p]
        pos = 0
        step = self.LOG
        m = self.maxstamp
        while step:
            nx = pos + step
            if nx <= m and f[nx] < k:
                pos = nx
                k -= f[nx]
            step >>= 1
        return pos + 1

    def _clean(self, p, i):
        """write back dirty line i of partition p; it stays, clean"""
        self.dirty[p][i] = 0
        self.ndirty[p] -= 1
        self.dl[p][self.set_of[i]].remove(i)
        del self.gdl[p][i]
        if self.policy.victim == 'sample':
            self._fadd(p, self.stamp_of[p][i], -1)
        self.wr += 1

    def _victim(self, p, s, cur):
        pol = self.policy
        if pol.victim == 'sample':
            n = self.ndirty[p]
            if n <= 1:
                return None
            k = max(1, int(self.q * n))
            for _ in range(4):
                v = self.stamp_line[p][self._fkth(p, 1 + int(self.rng.random() * k))]
                if v != cur:
                    return v
            return None
        if pol.victim == 'rset':
            for _ in range(64):
                d = self.dl[p][self.rng.randrange(self.nsets)]
                if d and d[0] != cur:
                    return d[0]
            return None
        if pol.victim == 'set':
            d = self.dl[p][s]
            for v in d:
                if v != cur:
                    return v
            return None
        for v in self.gdl[p]:
            if v != cur:
                return v
            # cur is the LRW: the next one
        return None

    def _mark_dirty(self, p, i):
        s = self.set_of[i]
        d = self.dl[p][s]
        g = self.gdl[p]
        new = not self.dirty[p][i]
        if new:
            self.dirty[p][i] = 1
            self.ndirty[p] += 1
        else:
            d.remove(i)
            del g[i]
        d.append(i)
        g[i] = None
        pol = self.policy
        if pol.victim == 'sample':
            if not new:
                self._fadd(p, self.stamp_of[p][i], -1)
            self.now[p] += 1
            st = self.now[p]
            if st > self.maxstamp:
                raise RuntimeError('stamps exhausted')
            self.stamp_of[p][i] = st
            self.stamp_line[p][st] = i
            self._fadd(p, st, 1)
        # per-set limit
        if pol.dset is not None:
            while len(d) > pol.dset:
                self._clean(p, d[0] if d[0] != i else d[1])
        if self.cap is None:
            return
        if self.ndirty[p] > self.cap:
            if self.lo is not None:
                while self.ndirty[p] > self.lo:
                    v = self._victim(p, s, i) if pol.victim != 'global' else next(iter(g))
                    if v is None or v == i:
                        break
                    self._clean(p, v)
                return
            while self.ndirty[p] > self.cap:
                v = self._victim(p, s, i)
                if v is None:
                    break
                self._clean(p, v)
            return
        if self.t1 is not None and self.ndirty[p] > self.t1 and (new or pol.trigger == 'write'):
            a = self.acc[p] + (pol.p * min(1.0, (self.ndirty[p] - self.t1) / (self.cap - self.t1))
                               if getattr(pol, 'ramp', False) else pol.p)
            if a >= 1.0:
                a -= 1.0
                v = self._victim(p, s, i)
                if v is not None:
                    self._clean(p, v)
            self.acc[p] = a

    # --- capacity
    def _touch(self, p, i):
        if self.assoc == 'set':
            l = self.lru[p][self.set_of[i]]
            if l[-1] != i:
                l.remove(i)
                l.append(i)
        else:
            d = self.lru[p]
            del d[i]
            d[i] = None

    def _insert(self, p, i):
        if self.assoc == 'set':
            l = self.lru[p][self.set_of[i]]
            if len(l) >= self.ways:
                v = l.pop(0)
                self._evict(p, v)
            l.append(i)
        else:
            d = self.lru[p]
            if len(d) >= self.part_lines:
                v = next(iter(d))
                del d[v]
                self._evict(p, v)
            d[i] = None
        self.present[p][i] = 1

    def _evict(self, p, v):
        self.present[p][v] = 0
        if self.dirty[p][v]:
            self._clean(p, v)

    # --- accesses
    def read(self, i, side):
        h = self.home[i]
        pr = self.present
        if pr[side][i]:
            self._touch(side, i)
            return
        if side != h and pr[h][i]:
            self._touch(h, i)
            self._insert(side, i)
            return
        self.rd += 1
        self._insert(h, i)
        if side != h:
            self._insert(side, i)

    def write(self, i, side):
        h = self.home[i]
        pr = self.present
        if side != h and pr[side][i]:
            self._touch(side, i)
        if pr[h][i]:
            self._touch(h, i)
        else:
            self._insert(h, i)
        self._mark_dirty(h, i)


def stream(nbytes, every_sm, reverse=False):
    """The probe kernel's line order: list of (line, side). Blocks of 256 threads x 16 B; block b
    takes the b-th contiguous slice; every block's iteration k before any block's k + 1."""
    n16 = nbytes // 16
    blocks = 4 * SMS if every_sm else 1
    per = (n16 + blocks - 1) // blocks
    iters = (per + 255) // 256
    out = []
    for k in range(iters):
        for b in range(blocks):
            lo, hi = b * per, min(n16, (b + 1) * per)
            if lo >= hi:
                continue
            if not reverse:
                a, z = lo + k * 256, min(hi, lo + (k + 1) * 256)
                if a >= z:
                    continue
                side = (b % SMS) % 2
                last = -1
                for q in range(a, z, 8):
                    ln = q // 8
                    if ln != last:
                        out.append((ln, side))
                        last = ln
                if (z - 1) // 8 != last:
                    out.append(((z - 1) // 8, side))
            else:
                # thread t handles i = hi - 1 - (t + j*256): iteration k covers [hi-(k+1)*256, hi-k*256)
                z, a = hi - k * 256, max(lo, hi - (k + 1) * 256)
                if a >= z:
                    continue
                side = (b % SMS) % 2
                last = -1
                for q in range(z - 1, a - 1, -8):
                    ln = q // 8
                    if ln != last:
                        out.append((ln, side))
                        last = ln
                if a // 8 != last:
                    out.append((a // 8, side))
    return out


def run_row(l2_bytes, mib, every_sm, mode, policy, ways=16, hash_kind='random', assoc='set', seed=1):
    """Returns (reads, writes) of the measured launch as shares of the buffer; for w and d the
    dirty lines held after the write (the flush's write-back)."""
    nbytes = int(mib * 1048576) // 16 * 16
    nlines = (nbytes + LINE - 1) // LINE
    c = L2(l2_bytes, nlines, ways, policy, hash_kind, assoc, seed)
    fwd = stream(nbytes, every_sm)
    rd, wr = c.read, c.write
    if mode in 'wad':
        for i, s in fwd:
            wr(i, s)
    elif mode in 'mv':
        for i, s in fwd:
            rd(i, s)
            wr(i, s)
    else:
        for i, s in fwd:
            rd(i, s)
    c.rd = c.wr = 0
    if mode in 'wd':
        held = c.ndirty[0] + c.ndirty[1]
        return 0.0, held / nlines
    if mode == 'a' or mode == 'r':
        for i, s in fwd:
            rd(i, s)
    elif mode == 'm':
        for i, s in fwd:
            rd(i, s)
            wr(i, s)
    elif mode == 'v':
        for i, s in stream(nbytes, every_sm, reverse=True):
            rd(i, s)
            wr(i, s)
    return c.rd / nlines, c.wr / nlines
