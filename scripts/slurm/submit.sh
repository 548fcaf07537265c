#!/usr/bin/env bash
# Runs a preset across a Slurm cluster: a job array of N tasks, task i running shard i/N
# of the preset on every GPU of its node, then a merge job that joins the shards into one
# result file once every task has succeeded.
#
#   scripts/slurm/submit.sh PRESET N OUT_DIR [sbatch options...]
#   scripts/slurm/submit.sh fa1-tables 8 /scratch/me/fa1 --partition=gpu --gpus-per-node=4 --time=04:00:00
#
# Writes OUT_DIR/shard-I-of-N.json per task and OUT_DIR/PRESET.json at the end. Extra
# `flashio run` options go in FLASHIO_ARGS (e.g. FLASHIO_ARGS="--reps 10 --seqlen 1024,2048");
# FLASHIO_BIN names the binary (default: build/flashio under this checkout). A task that is
# requeued or resubmitted resumes from its journal, so finished points are not run again.
set -euo pipefail
preset="${1:?usage: scripts/slurm/submit.sh PRESET N OUT_DIR [sbatch options...]}"
shards="${2:?usage: scripts/slurm/submit.sh PRESET N OUT_DIR [sbatch options...]}"
out_dir="${3:?usage: scripts/slurm/submit.sh PRESET N OUT_DIR [sbatch options...]}"
shift 3
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${FLASHIO_BIN:-$root/build/flashio}"
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: N must be a positive integer (got '$shards')" >&2; exit 2; }
# A bad preset or option fails here, once, rather than in every task of the array.
# shellcheck disable=SC2086
if ! err=$("$bin" run --preset "$preset" ${FLASHIO_ARGS:-} --dry-run 2>&1 >/dev/null); then
  echo "$err" >&2
  exit 2
fi
mkdir -p "$out_dir"
export FLASHIO_BIN="$bin" FLASHIO_PRESET="$preset" FLASHIO_OUT_DIR="$out_dir" FLASHIO_SHARDS="$shards" FLASHIO_ARGS="${FLASHIO_ARGS:-}"
array=$(sbatch --parsable --array="0-$((shards - 1))" --output="$out_dir/shard-%a-of-$shards.log" "$@" "$here/preset_array.sbatch")
merge=$(sbatch --parsable --dependency="afterok:${array%%;*}" --output="$out_dir/merge.log" "$@" "$here/merge.sbatch")
echo "submitted: array job $array ($shards shards of $preset), merge job $merge -> $out_dir/$preset.json"
