#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi -L
tar xJf .gpu/b3.tar.xz -C /tmp
mkdir -p /tmp/d /tmp/c
/tmp/ab/flashio_gpu_tests --gtest_filter='Odd/Flash3Backward*:Flash3Test.Backward*' > /tmp/c/tests.txt 2>&1; echo "tests rc $?"; grep -E "PASSED|FAILED  \]|tests ran" /tmp/c/tests.txt | tail -4
grep -A3 "Failure" /tmp/c/tests.txt | grep -v "dq_adds\|tiles\"\|pairs\"\|Failure\|^--\|Expected equality" | sort | uniq -c | head
ax=(--seqlen 2048,4096,16384 --causal false,true --tokens 16384 --model-dim 2048 --head-dim 64,128)
for round in 1 2; do
  R=(--reps 10 --warmup 3 -q --counters off)
  for v in base single double; do
    /tmp/ab/flashio-$v run --method flash3 "${ax[@]}" --pass bwd "${R[@]}" --out /tmp/d/$v-$round.json >/dev/null 2>&1 || echo "rc $v $?"
  done
done
python3 - <<'PY'
import json,glob,collections
t=collections.defaultdict(list)
for f in sorted(glob.glob("/tmp/d/*.json")):
    who=f.split("/")[-1].split("-")[0]
    for r in json.load(open(f))["records"]:
        if r.get("time"):
            p=r["problem"]; t[(who,(r["pass"],p["head_dim"],p["causal"],p["seqlen_q"]))].append(r["time"]["median_s"]*1e6)
        else: print(who, r["name"], r["status"], r.get("reason","")[:100])
for k in sorted(set(k for _,k in t)):
    b=min(t[("base",k)]); n=min(t[("single",k)]); d=min(t[("double",k)])
    print(f"{str(k):32s} base {b:8.1f} single {n:8.1f} ({b/n:.3f}) double {d:8.1f} ({b/d:.3f})")
PY
cd /tmp && tar czf "$OUT/d.tgz" d c
