#!/usr/bin/env bash
# Adopting ../proper.patch (flash_decode's tile per head dim: d 128 eight warps × two stages; measured in ../ab.md and
# ../h100/ab.md; not in the kernels), once per GPU, on the build of the patch applied and committed (`ninja flashio`,
# `scripts/gpu_bundle.sh pack flashio`, carry .gpu or another FLASHIO_BUNDLE_DIR; the GPU tests and their
# sanitizers are tests.sh's call):
#   1. correctness through the CLI, every point checked against the float64 reference: odd key lengths, Nq 1–16,
#      d 64/128/256, fp16/bf16, causal (top-left, as every method), GQA 8:2, contiguous and paged:64; variable
#      lengths (a length 0 among them) with 1 and 4 queries per sequence, packed and paged;
#   2. the committed decode files of this GPU: `decode` (+ `-sdpa`; scripts/decode_bench.sh's run and verdicts, the
#      copy bandwidth; its GPU tests skipped here), `llama3-8b-decode-varlen` (+ `-sdpa`), and on the H100
#      `llama3-8b-decode`, `llama3-70b-decode`.
# Writes OUT/gpu.txt (one line per step) and OUT/d.tar.xz (every file, re-packed after each step).   run.sh OUT
set -u
OUT=$1
bash scripts/gpu_bundle.sh unpack
F=build/flashio
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H200*) gpu=h200 ;; *) gpu=h100 ;; esac
D=/tmp/d
mkdir -p $D
done_step() { echo "$1 at ${SECONDS}s" >> $OUT/gpu.txt; tar -C /tmp -cJf $OUT/d.tar.xz d; }
last_line() { echo "$1 rc $2: $(tail -1 $D/$1.txt)" >> $OUT/gpu.txt; }

A="--reps 1 --warmup 0 --counters off -q"
$F run --method flash_decode --seqlen 1,3,16 --seqlen-k 1,17,1013,4099,20011 -b 3 --heads 8 --kv-heads 2 \
  --head-dim 64,128,256 --dtype fp16,bf16 --causal false,true --kv-layout contiguous,paged:64 $A \
  --out $D/correctness.json > $D/correctness.txt 2>&1; last_line correctness $?
$F run --method flash_decode --seqlens uniform:0-5000 --seqlen-q 1,4 -b 7 --heads 8 --kv-heads 2 --head-dim 64,128,256 \
  --dtype fp16,bf16 --causal false,true --kv-layout contiguous,paged:64 $A \
  --out $D/correctness-varlen.json > $D/correctness-varlen.txt 2>&1; last_line correctness-varlen $?
done_step correctness

FLASHIO_SKIP_GPU_TESTS=1 scripts/decode_bench.sh $D/decode > $D/decode-bench.txt 2>&1; echo "decode_bench rc $?" >> $OUT/gpu.txt
done_step decode

$F run --preset llama3-8b-decode-varlen --counters full -q --out $D/llama3-8b-decode-varlen.json \
  > $D/varlen.txt 2>&1; last_line varlen $?
read -r run_id revision < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["run_id"], d["build"]["git_revision"])' $D/llama3-8b-decode-varlen.json)
python3 scripts/peers_sdpa.py --flashio $F --preset llama3-8b-decode-varlen --backend flash,cudnn,efficient,math,flex \
  --run-id "$run_id" --git-revision "$revision" --out $D/llama3-8b-decode-varlen-sdpa.json > $D/varlen-sdpa.txt 2>&1
last_line varlen-sdpa $?
done_step varlen

if [ $gpu = h100 ]; then
  for p in llama3-8b-decode llama3-70b-decode; do
    $F run --preset $p --counters full -q --out $D/$p.json > $D/$p.txt 2>&1; last_line $p $?
    done_step $p
  done
fi
