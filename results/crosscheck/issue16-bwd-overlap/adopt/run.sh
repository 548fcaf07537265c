#!/usr/bin/env bash
# Adopting ../p-before-dp-wait.patch (P while dPᵀ runs; measured in ../h100/ and, this call's H100 half, in h100/; not in the kernels), once per GPU:
# its correctness through the CLI at odd sizes (every run checked against the float64 reference), compute-sanitizer's
# memcheck, racecheck and synccheck through the CLI (reference on the host), then the committed files it changes:
# `reproduce_results.sh flash3bwd` (flash3 and flash2 beside SDPA's cuDNN and flash back-ends) and `oos` (its flash3
# fwd+bwd points). TOOLS= skips the sanitizers. Build: the patch applied and committed, `ninja flashio`,
# `scripts/gpu_bundle.sh pack flashio`, carry .gpu.   run.sh OUT
set -u
OUT=$1
bash scripts/gpu_bundle.sh unpack
F=build/flashio
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
mkdir -p /tmp/r
done_step() { echo "$1 at ${SECONDS}s" >> $OUT/gpu.txt; tar -C /tmp -cJf $OUT/r.tar.xz r; }
# Odd sizes, both head dims and dtypes, causal off/on, key padding, GQA; passes bwd and fwd+bwd.
$F run --method flash3 --pass bwd,fwdbwd --seqlen 1,17,1013,4099 -b 2 --heads 6 --kv-heads 3 --head-dim 64,128 \
  --dtype fp16,bf16 --causal false,true --padding none,random --reps 1 --warmup 0 --counters off -q \
  --out /tmp/r/correctness.json > /tmp/r/correctness.txt 2>&1; echo "correctness rc $?" >> $OUT/gpu.txt
tail -1 /tmp/r/correctness.txt >> $OUT/gpu.txt; done_step correctness
for tool in ${TOOLS-memcheck racecheck synccheck}; do
  compute-sanitizer --tool $tool --error-exitcode 3 $F run --method flash3 --pass bwd --seqlen 1013 -b 2 --heads 6 \
    --kv-heads 3 --head-dim 64,128 --causal false,true --reps 1 --warmup 0 --counters off --reference host -q \
    --out /tmp/r/sanitize-$tool.json > /tmp/r/$tool.log 2>&1
  echo "$tool rc $?: $(grep -E 'SUMMARY' /tmp/r/$tool.log) $(grep -E '^ok ' /tmp/r/$tool.log)" >> $OUT/gpu.txt
done
done_step sanitize
bash scripts/reproduce_results.sh /tmp/r flash3bwd > /tmp/r/flash3bwd.txt 2>&1; echo "flash3bwd rc $?" >> $OUT/gpu.txt
done_step flash3bwd
bash scripts/reproduce_results.sh /tmp/r oos > /tmp/r/oos.txt 2>&1; echo "oos rc $?" >> $OUT/gpu.txt
done_step oos
