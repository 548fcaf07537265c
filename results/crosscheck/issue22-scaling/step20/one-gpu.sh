#!/usr/bin/env bash
set -uo pipefail
xz -dc .gpu/ref3.tar.xz | tar xf -
cd build
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
T=./tests/flashio_gpu_tests
$T --gtest_filter='DeviceReferenceGpu.*:HostSide.*' --gtest_brief=1 2>&1 | tail -15
for tool in memcheck racecheck synccheck; do
  echo "== $tool"; compute-sanitizer --tool $tool --print-limit 10 $T --gtest_filter='DeviceReferenceGpu.AgreesWith*:DeviceReferenceGpu.ARows*' --gtest_brief=1 2>&1 | tail -3
done
args=(--method standard,flash2 --seqlen 1024,2048,4096,8192 --head-dim 64,128 --causal false,true --pass fwd,fwdbwd --counters off --reps 5 --warmup 2)
for i in 1 2 3 4; do for r in gpu host; do
  ./flashio run "${args[@]}" -q --devices 0 --reference $r --out /tmp/sweep-$r-$i.json > /dev/null 2>/tmp/sweep-$r-$i.err || { echo "FAILED $r $i"; tail -3 /tmp/sweep-$r-$i.err; }
done; done
cp /tmp/sweep-gpu-1.json /tmp/sweep-host-1.json $OUT/
python3 - /tmp <<'PY'
import json, sys, glob, statistics as st
out = sys.argv[1]
w = {}
for f in sorted(glob.glob(out + "/sweep-*.json")):
    d = json.load(open(f)); rs = d["records"]
    ph = lambda k: sum(r["phases_s"][k] for r in rs)
    w.setdefault(f.split("-")[1], []).append(d["wall_s"])
    print(f.split("/")[-1], "wall %.3f" % d["wall_s"], "passed", sum(bool(r.get("check", {}).get("passed", False)) for r in rs),
          "reference %.3f check %.3f timed %.3f inputs %.3f" % (ph("reference"), ph("check"), ph("timed"), ph("inputs")))
for k, v in w.items(): print(k, "median wall %.3f" % st.median(v), v)
g = {r["name"]: r for r in json.load(open(out + "/sweep-gpu-1.json"))["records"]}
h = {r["name"]: r for r in json.load(open(out + "/sweep-host-1.json"))["records"]}
worst = 0
for n, r in g.items():
    a, b = r.get("check", {}), h[n].get("check", {})
    if a.get("passed") != b.get("passed"): print("VERDICT DIFFERS", n)
for r in g.values():
    if r["phases_s"]["reference"] > 0.002: print("  %-48s %.4f" % (r["name"], r["phases_s"]["reference"]))
PY
echo "== ncu"
ncu --clock-control none --kernel-name regex:"tile_kernel|dkdv_kernel|combine" --launch-count 12 --section SpeedOfLight --section Occupancy --section LaunchStats \
  ./flashio run --method flash2 --seqlen 2048 --head-dim 64 --pass fwdbwd --counters off --reps 1 --warmup 0 -q --out /tmp/ncu.json 2>&1 | grep -E "tile_kernel|dkdv_kernel|combine_|Duration|Achieved Occupancy|Grid Size|Registers Per" | head -80
