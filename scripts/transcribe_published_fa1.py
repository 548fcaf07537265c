# One-off: FlashAttention (Dao et al., 2022) Appendix E.9, Tables 14-26 (A100-SXM4-40GB),
# PyTorch Attention and FLASHATTENTION rows, as a flashio result file.
import json, math
N = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
D = None
T = {  # table: (dropout, masking, pass, pytorch row, flash row)
 14: (True, True, "fwd", [0.36,0.34,0.78,2.54,9.33,36.33], [0.04,0.06,0.21,0.82,2.85,10.41,41.74,167.19,670.76,2682.3]),
 15: (True, True, "bwd", [0.37,0.49,1.66,5.81,22.32,87.67], [0.30,0.26,0.68,2.02,6.84,26.89,105.70,418.96,1666.89,6660.44]),
 16: (True, True, "fwdbwd", [0.84,0.86,2.35,8.29,31.75,124.19], [0.43,0.41,0.95,2.55,9.56,37.49,147.75,586.61,2339.11,9341.30]),
 17: (False, True, "fwd", [0.30,0.30,0.63,1.93,7.08,27.45,112.90], [0.03,0.04,0.17,0.68,2.28,8.40,33.55,134.14,537.50,2150.88]),
 18: (False, True, "bwd", [0.44,0.46,1.53,5.33,20.34,79.87], [0.21,0.22,0.62,1.84,5.77,22.25,86.21,338.91,1343.91,5361.09]),
 19: (False, True, "fwdbwd", [0.80,0.81,2.08,7.23,27.51,107.58], [0.32,0.30,0.83,2.37,7.95,30.77,119.98,473.65,1883.43,7513.01]),
 20: (True, False, "fwd", [0.26,0.24,0.57,1.80,6.56,25.34], [0.10,0.10,0.22,0.83,2.81,10.38,41.63,167.01,668.74,2678.1]),
 21: (True, False, "bwd", [0.44,0.35,0.90,2.94,10.77,41.67], [0.15,0.18,0.58,1.86,6.50,26.21,104.27,416.10,1661.92,6643.01]),
 22: (True, False, "fwdbwd", [0.66,0.67,1.43,4.82,17.47,67.29], [0.35,0.36,0.80,2.52,9.16,36.70,146.13,583.45,2332.01,9323.63]),
 23: (False, False, "fwd", [0.21,0.22,0.43,1.27,4.32,16.47,67.77], [0.08,0.09,0.18,0.68,2.40,8.42,33.54,134.03,535.95,2147.0]),
 24: (False, False, "bwd", [0.26,0.29,0.78,2.44,8.82,33.87], [0.11,0.16,0.52,1.62,5.45,21.57,84.75,336.00,1338.56,5343.19]),
 25: (False, False, "fwdbwd", [0.67,0.70,1.18,3.67,13.22,50.44], [0.31,0.31,0.73,2.29,7.64,30.09,118.50,470.51,1876.08,7492.85]),
}
MEM = {"standard": [36,104,336,1184,4416,17024], "flash1": [22,44,104,209,418,836,1672,3344,6688,13376]}
B, H, Dh = 16, 8, 64
def problem(n, dropout, masking):
    return {"batch": B, "heads": H, "kv_heads": H, "seqlen_q": n, "seqlen_k": n, "head_dim": Dh, "dtype": "fp16",
            "causal": False, "padding": "random" if masking else "none", "dropout": 0.1 if dropout else 0.0,
            "seed": 24301, "softmax_scale": 0.125, "block_r": 0, "block_c": 0}
def name(method, p, n, dropout, masking):
    s = f"{method}/{p}/b:{B}/h:{H}/n:{n}/d:{Dh}/fp16"
    if masking: s += "/pad"
    if dropout: s += "/drop:0.1"
    return s
def flops(n, p):
    f = 4.0 * B * H * n * n * Dh
    return f * {"fwd": 1.0, "bwd": 2.5, "fwdbwd": 3.5}[p]
recs = []
for tab, (dropout, masking, p, torch_row, flash_row) in T.items():
    for method, label, row in (("standard", "PyTorch Attention", torch_row), ("flash1", "FLASHATTENTION", flash_row)):
        for n, ms in zip(N, row):
            t = ms * 1e-3
            r = {"name": name(method, p, n, dropout, masking), "method": method, "pass": p,
                 "problem": problem(n, dropout, masking), "status": "ok", "device_index": 0,
                 "flops": flops(n, p), "tflops": flops(n, p) / t / 1e12,
                 "time": {"median_s": t, "min_s": t, "max_s": t, "mean_s": t, "stddev_s": 0.0, "reps": 1, "warmup": 0,
                          "l2_flushed": False, "clock": "published"},
                 "counters": {"status": "not_collected", "reason": "published figures: no counters"},
                 "published": {"source": "FlashAttention (Dao et al., 2022), Appendix E.9", "table": f"Table {tab}",
                               "row": label, "unit": "ms"}}
            if p == "fwdbwd" and not dropout and not masking and n <= (65536 if method == "flash1" else 4096):
                mb = MEM[method][N.index(n)]
                r["memory"] = {"inputs_bytes": 0, "outputs_bytes": 0, "workspace_bytes": 0, "total_bytes": mb * 1000000}
                r["published"]["memory_table"] = "Table 26"
            recs.append(r)
f = {"schema": "flashio/result", "schema_version": 1, "run_id": "fa1-paper-a100-tables-14-26",
     "created": "2022-06-23T00:00:00Z", "producer": "published",
     "command_line": "transcribed from FlashAttention (Dao et al., 2022, arXiv:2205.14135 v2), Appendix E.9, Tables 14-26: PyTorch Attention -> standard, FLASHATTENTION -> flash1; batch 16, 8 heads, d 64, fp16, dropout 0.1, masking = random key padding",
     "build": {}, "device": {"name": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0", "sm_count": 108,
                            "l2_bytes": 41943040, "smem_per_sm_bytes": 167936, "smem_per_block_optin_bytes": 166912,
                            "global_memory_bytes": 42949672960, "peak_bandwidth_bytes_per_s": 1.555e12},
     "records": recs}
json.dump(f, open("/work/wt8/results/published/a100-flashattention-paper.json", "w"), indent=1, sort_keys=True)
print(len(recs))
