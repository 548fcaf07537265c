#!/usr/bin/env bash
# Two H200s: the 64-point sweep with the reference on the host and on the GPUs (same binary, alternated), the scaling files, the GPU suite.
set -uo pipefail
xz -dc .gpu/ref3.tar.xz | tar xf -
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
git log --oneline -1 2>/dev/null
(cd build && ./tests/flashio_gpu_tests --gtest_filter="DeviceReferenceGpu.*" --gtest_brief=1 2>&1 | tail -3; compute-sanitizer --tool memcheck ./tests/flashio_gpu_tests --gtest_filter="DeviceReferenceGpu.*" --gtest_brief=1 2>&1 | tail -2) | tee /tmp/devref-tests.txt
B=build/flashio
mkdir -p /tmp/ab
args=(--method standard,flash2 --seqlen 1024,2048,4096,8192 --head-dim 64,128 --causal false,true --pass fwd,fwdbwd --counters off --reps 5 --warmup 2)
for r in 1 2 3 4 5; do for v in host gpu; do for dev in 0 all; do
  $B run "${args[@]}" -q --devices $dev --reference $v --out /tmp/ab/$v-$dev-$r.json >/dev/null 2>/tmp/ab/$v-$dev-$r.err || { echo "FAILED $v $dev $r"; tail -3 /tmp/ab/$v-$dev-$r.err; }
done; done; done
python3 - /tmp/ab 5 <<'PY' | tee /tmp/ab/ab.txt
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
walls = {}
for r in range(1, rounds + 1):
    for v in ("host", "gpu"):
        for dev in ("0", "all"):
            d = json.load(open(f"{out}/{v}-{dev}-{r}.json"))
            walls.setdefault((v, dev), []).append(d["wall_s"])
            gpus = {}
            for rec in d["records"]:
                g = gpus.setdefault(rec.get("device_index", 0), dict(busy=0, check=0, wait=0, ref=0, timed=0))
                p = rec["phases_s"]; g["busy"] += p["total"]; g["check"] += p["check"]; g["timed"] += p["timed"]
                g["wait"] += p["inputs"]; g["ref"] += p["reference"]
            per = "; ".join(f"GPU {k} busy {g['busy']:.3f} check {g['check']:.3f} timed {g['timed']:.3f} inputs {g['wait']:.3f} reference {g['ref']:.3f}" for k, g in sorted(gpus.items()))
            print(f"{v:4s} {dev:3s} run {r}: wall {d['wall_s']:.3f} s; {per}")
for v in ("host", "gpu"):
    one, two = st.median(walls[(v, "0")]), st.median(walls[(v, "all")])
    pairs = [a / b for a, b in zip(walls[(v, "0")], walls[(v, "all")])]
    print(f"reference on the {v}: one GPU median {one:.3f} s, two {two:.3f} s, {one / two:.3f}x (pairs {min(pairs):.3f}-{max(pairs):.3f})")
PY
mkdir -p /tmp/sc
FLASHIO_BIN=$B scripts/scaling.sh /tmp/sc both 2>&1 | tee /tmp/sc/scaling.txt
cp /tmp/ab/ab.txt /tmp/devref-tests.txt /tmp/sc/
tar cf $OUT/sc.tar -C /tmp sc
tar cf $OUT/ab.tar -C /tmp ab
echo "== GPU suite"
(cd build && nvidia-smi --query-gpu=name --format=csv,noheader && timeout 300 ./tests/flashio_gpu_tests --gtest_brief=1 2>&1 | tail -6) > $OUT/gpu-tests.txt 2>&1
tail -4 $OUT/gpu-tests.txt
