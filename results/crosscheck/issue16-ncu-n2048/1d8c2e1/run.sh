#!/usr/bin/env bash
set -u
xz -dc .gpu/ab.tar.xz | tar xf -
for n in 2048 16384; do N=$n scripts/flash3_ncu.sh $OUT/n$n 128 > $OUT/log-$n.txt 2>&1; done
rm -f $OUT/n*/run-*.json
