#!/usr/bin/env bash
# flash1's causal forward at odd N with many splits: do its O, l, m re-reads hit L1?
set -uo pipefail
xz -dc .gpu/s21.tar.xz | tar xf - build/flashio
m=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,l1tex__m_xbar2l1tex_read_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum
for args in "--batch 2 --heads 10 --head-dim 64 --seqlen 2600" "--batch 3 --heads 5 --head-dim 128 --seqlen 3300" "--batch 16 --heads 8 --head-dim 64 --seqlen 2048"; do
  for c in true false; do
    echo "== $args causal $c"
    rm -f /tmp/x.json
    ncu --clock-control none --metrics $m -k regex:flash1_fwd -c 4 --csv --print-units base \
      build/flashio run --method flash1 --pass fwd $args --causal $c --reps 1 --warmup 0 --counters off -q --out /tmp/x.json 2>&1 \
      | grep -E '^"1"' | awk -F'","' '{print $1, $(NF-2), $NF}' | sed 's/"//g'
  done
done
