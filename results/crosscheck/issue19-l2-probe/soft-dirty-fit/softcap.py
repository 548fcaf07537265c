#!/usr/bin/env python3
"""The GH100 L2's dirty write-back against the L2 probe's tables (issue 19, the soft edge).

Reads results/crosscheck/issue19-l2-probe/nvidia-{h100,h200}-l2-probe*.txt, replays every row's
launches line by line (sim.py: 128-byte lines, the probe kernel's exact order: 528 blocks or one,
contiguous slices, 4 KiB per block iteration, block b on SM b mod 132, side = SM mod 2) and prints
measured against predicted:
  r      2nd read pass: DRAM reads / buffer
  w, dUS dirty bytes held after the write (the next kernel's write-back) / buffer
  a      the read after the write: DRAM reads, DRAM writes / buffer
  m, v   the 2nd read-modify-write pass (v: reversed): DRAM reads, DRAM writes / buffer

  python3 softcap.py                      the chosen mechanism, every row (scale 4: see --scale)
  python3 softcap.py --candidate hard     a rejected one (hard, nobnd, perset16r, perset32e, hyst,
                                          setlocal, band); --candidate all: each on the dirty rows
  --scale S   simulate an L2 and buffers S times smaller (same shares, same block count; 1 = full
              size, slow: a few minutes per GPU table); --max-x X  skip rows past X × L2 (default
              1.05: beyond it everything is evicted by capacity, the dirty limit plays no part)
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim  # noqa: E402

# The probe tables: the folder above this one (results/crosscheck/issue19-l2-probe/).
DIR = os.environ.get('FLASHIO_PROBE_DIR', os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLES = [('h100', 50, 'nvidia-h100-l2-probe.txt'), ('h200', 60, 'nvidia-h200-l2-probe.txt'),
          ('h200', 60, 'nvidia-h200-l2-probe-idle.txt'), ('h200', 60, 'nvidia-h200-l2-probe-reversed.txt')]


def chosen():
    p = sim.Policy('chosen', cap=0.455, victim='sample', q=0.25, t1=0.37, p=0.25)
    p.ramp = True
    return p


def candidates():
    c = {'chosen': (chosen(), {})}
    c['nobnd'] = (sim.Policy('nobnd', cap=0.455, victim='sample', q=0.25), {})
    c['hard'] = (sim.Policy('hard', cap=0.46, victim='global'), {})
    c['perset16r'] = (sim.Policy('perset16r', cap=None, dset=7), {'ways': 16, 'hash_kind': 'random'})
    c['perset32e'] = (sim.Policy('perset32e', cap=None, dset=15), {'ways': 32, 'hash_kind': 'even'})
    c['hyst'] = (sim.Policy('hyst', cap=0.46, lo=0.40, victim='global'), {})
    c['setlocal'] = (sim.Policy('setlocal', cap=0.455, victim='set'), {'ways': 16, 'hash_kind': 'random'})
    band = sim.Policy('band', cap=0.455, victim='global', t1=0.37, p=0.25)
    band.ramp = True
    c['band'] = (band, {})
    return c


def read_rows():
    rows = []
    for gpu, l2_mib, name in TABLES:
        path = os.path.join(DIR, name)
        for line in open(path):
            f = line.split()
            if len(f) < 6 or f[1] not in ('all', 'one'):
                continue
            try:
                mib, rd, wr, share = float(f[0]), float(f[3]), float(f[4]), float(f[5])
            except ValueError:
                continue
            held = float(f[6]) if len(f) > 6 else None
            rows.append(dict(gpu=gpu, l2=l2_mib, file=name, mib=mib, every=f[1] == 'all', mode=f[2], rd=rd, wr=wr,
                             share=share, held=held))
    return rows


def measured(r):
    """(reads, writes-or-held) as shares of the buffer, as the simulation reports them"""
    b = int(r['mib'] * 1048576) // 16 * 16
    m = r['mode']
    if m == 'w':
        return None, r['wr'] / b
    if m.startswith('d'):
        return None, r['held'] / b
    if m == 'r':
        return r['rd'] / b, None
    return r['rd'] / b, r['wr'] / b


def simulate(r, policy, opts, scale):
    mode = 'd' if r['mode'].startswith('d') else r['mode']
    l2 = (r['l2'] << 20) // scale
    rd, wr = sim.run_row(l2, r['mib'] / scale, r['every'], mode, policy, assoc='full', **opts)
    if mode in 'wd':
        return None, wr
    if mode == 'r':
        return rd, None
    return rd, wr


def fmt(x):
    return '    -' if x is None else '%5.3f' % x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--candidate', default='chosen')
    ap.add_argument('--scale', type=int, default=4)
    ap.add_argument('--max-x', type=float, default=1.05)
    ap.add_argument('--dirty-only', action='store_true', help='only rows 0.3-0.8 x L2 of modes w d m v a')
    a = ap.parse_args()
    cands = candidates()
    names = list(cands) if a.candidate == 'all' else [a.candidate]
    rows = read_rows()
    dirty_only = a.dirty_only or a.candidate == 'all'
    for name in names:
        policy, opts = cands[name]
        print(f'== {name}: {policy.__dict__} {opts} (scale {a.scale})')
        print('gpu  table     MiB  x·L2 side mode | reads meas  sim   | dirty meas  sim   | Δ dirty')
        errs, cache = [], {}
        for r in rows:
            x = r['mib'] / r['l2']
            if x > a.max_x:
                continue
            if dirty_only and (r['mode'] == 'r' or not 0.3 <= x <= 0.8):
                continue
            key = (r['gpu'], r['mib'], r['every'], 'd' if r['mode'].startswith('d') else r['mode'])
            if key not in cache:
                cache[key] = simulate(r, policy, opts, a.scale)
            mr, mw = measured(r)
            sr, sw = cache[key]
            d = None if mw is None else sw - mw
            if d is not None and 0.3 <= x <= 1.0:
                errs.append((abs(d), r, d))
            tag = r['file'].replace('nvidia-', '').replace('-l2-probe', '').replace('.txt', '') or 'main'
            print(f"{r['gpu']} {tag:12s} {r['mib']:6.2f} {x:5.3f} {'all' if r['every'] else 'one'}  {r['mode']:>5} | "
                  f"{fmt(mr)} {fmt(sr)} | {fmt(mw)} {fmt(sw)} | {'' if d is None else '%+.3f' % d}", flush=True)
        if errs:
            rms = math.sqrt(sum(e * e for e, _, _ in errs) / len(errs))
            worst = max(errs, key=lambda e: e[0])
            w = worst[1]
            print(f'-- {name}: dirty quantity (w/d held, m/v/a written) over {len(errs)} rows at 0.3–1.0 × L2: '
                  f'RMS {rms:.3f}, max |Δ| {worst[0]:.3f} ({w["gpu"]} {w["mib"]} {"all" if w["every"] else "one"} '
                  f'{w["mode"]}), within 0.05: {sum(e < 0.05 for e, _, _ in errs)}, within 0.10: '
                  f'{sum(e < 0.10 for e, _, _ in errs)}\n', flush=True)


if __name__ == '__main__':
    main()
