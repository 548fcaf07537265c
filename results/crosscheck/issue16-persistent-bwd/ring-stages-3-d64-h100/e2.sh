#!/usr/bin/env bash
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
scripts/ab_run.sh build/flashio_s2 build/flashio_s3 $OUT/ab .gpu/s3-sweep.json
python3 scripts/ab_table.py $OUT/ab 2>&1 | tail -40
