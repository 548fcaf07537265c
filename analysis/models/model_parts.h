// Pieces the model files share: the sector arithmetic of the closed forms, the compulsory DRAM
// terms common to several methods, and the DRAM walk over a grid's waves (dram_model.h). Not an
// interface: included by analysis/models/*.cpp only.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "analysis/dram_model.h"
#include "analysis/io_model.h"
#include "analysis/l2_sim.h"

namespace flashio::analysis::parts {

constexpr int64_t kSector = 32;
constexpr int64_t kF32 = 4;
// The forward's log-sum-exp term, by the name its Traffic carries (a peer's forward without a
// backward writes none: peers.cpp removes it).
inline const char* const kLseTerm = "L (log-sum-exp)";

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

inline void check_tiles(const ModelTiles& t, const char* kernel) {
  require(t.block_r > 0 && t.block_c > 0 && t.warps > 0,
          fmt::format("{}: the record's tiles are incomplete (block_r {}, block_c {}, warps {})", kernel, t.block_r,
                      t.block_c, t.warps));
  require(t.l_store_rows > 0 && t.block_r % t.l_store_rows == 0 && t.vector_load_rows > 0,
          fmt::format("{}: L is stored {} rows per instruction, which must divide Br = {}", kernel, t.l_store_rows,
                      t.block_r));
}

// The point's tiles of one kernel, or a sentence saying the record lacks them.
inline ModelTiles need_tiles(const std::optional<ModelTiles>& t, const ModelPoint& m, const char* which) {
  require(t.has_value(), fmt::format("{} {}: the record does not carry the {} kernel's tiles{}", m.method,
                                     to_string(m.pass), which, std::string(which) == "backward" ? " (tiles_bwd)" : ""));
  return *t;
}

// The fp32 vector a tile's epilogue or prologue touches for rows [row0, row0 + rows) of a head
// starting at element `head`: instructions cover `group` rows, group-aligned from the tile start.
inline int64_t tile_vector_bytes(int64_t head, int64_t row0, int64_t rows, int64_t group) {
  return grouped_fp32_sectors(head + row0, rows, group) * kSector;
}

// Σ over K/V tiles j < nb of smem_row_deliveries(min(bc, nk − j·bc)): whole tiles, the last cut at nk.
inline int64_t kv_xbar_rows(int64_t nb, int64_t nk, int64_t bc, SmemLayout l) {
  if (nb <= 0) return 0;
  if (nb * bc <= nk) return nb * smem_row_deliveries(bc, l);
  return (nb - 1) * smem_row_deliveries(bc, l) + smem_row_deliveries(nk - (nb - 1) * bc, l);
}

// Σ over Q tiles of smem_row_deliveries(rows of the tile).
inline int64_t q_xbar_rows(int64_t nq, int64_t br, SmemLayout l) { return kv_xbar_rows(ceil_div(nq, br), nq, br, l); }

// --- compulsory DRAM bytes: every input read once, every output written once ---------------

// The forward's inputs and outputs (every method): Q, K, V read; O, L written.
inline void add_forward_compulsory(const Problem& p, Traffic& out) {
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t rows = p.lse_elements();  // L: one fp32 per query row as stored (packed varlen: H·T)
  out.add("Q, K, V", q + 2 * kv, 0);
  out.add("O, L", 0, q + rows * kF32);
}

// A fused backward: per kernel, each reading its inputs and writing its outputs once (beyond
// the L2, nothing survives from one kernel to the next: H100, flash2 fwd+bwd, b 16, h 8, N 4096,
// d 64 reads within 0.2 % of this, the main kernel re-reading Q, K, V and dO). The fp32 dQ
// accumulator (2× Q's bytes at fp16): zeroed, written back by the main kernel, read by the
// convert. `d_in_main_kernel` (flash1): no preprocess, ℓ and m read instead of L and D.
inline void add_fused_backward_compulsory(const Problem& p, bool d_in_main_kernel, Traffic& out) {
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t rows = p.batch * p.heads * p.seqlen_q;
  const int64_t acc = rows * p.head_dim * kF32, lvec = rows * kF32;
  if (d_in_main_kernel) {
    out.add("main: Q, K, V, O, dO, l, m", 2 * q + 2 * kv + q + 2 * lvec, 0);
  } else {
    out.add("preprocess: O, dO -> D", 2 * q, lvec);
    out.add("main: Q, K, V, dO, L, D", 2 * q + 2 * kv + 2 * lvec, 0);
  }
  out.add("main: dK, dV", 0, 2 * kv);
  out.add("dQ accumulator (fp32)", 2 * acc, acc);  // read by main (zeroed lines evicted) and convert
  out.add("convert: dQ", 0, q);
}

// --- the DRAM walk (dram_model.h) ------------------------------------------------------------

inline int64_t term_bytes(const Traffic& t, const std::string& name) {
  for (const auto& x : t.terms)
    if (x.name == name) return x.read + x.write + x.red + x.atom;
  return 0;
}

// The fp32 dQ bytes the backward's visits add (rows × d × 4 per visit), whatever the width of
// the instructions that add them: the read-modify-write reads each sector once (a 4-byte pair's
// second load hits L1); an atomic sector carries `dq.atomic` × 16 bytes.
inline int64_t dq_visit_bytes(const Traffic& sm, DqWidth dq) {
  int64_t bytes = 0;
  for (const auto& x : sm.terms) {
    if (x.name == "dQ read-modify-write") bytes += x.read;
    if (x.name == "dQ accumulate (atomic)") bytes += x.red * dq.atomic / 2;
  }
  return bytes;
}

// Walks the grid in launch order (x fastest) wave by wave. `unit_of(block)` names the operand
// a block streams (a head, or a K/V head) and `bytes_of(block)` how much of it the block needs;
// a unit is fetched from DRAM in a wave when the wave is its first or the wave's working set
// spills out of the usable L2, and again by each further layer of co-resident blocks holding
// it once the layers drift apart (dram_model.h). Returns the bytes fetched and fills the
// prediction's wave data.
template <typename UnitOf, typename BytesOf>
int64_t stream_fetches(int64_t blocks, int64_t wave, int64_t sms, double usable, double drift, UnitOf unit_of,
                       BytesOf bytes_of, DramPrediction& out) {
  std::set<int64_t> seen;
  std::map<int64_t, int64_t> waves_touching;
  const double drift_point = drift > 0 ? usable / (2 * drift) : -1;  // bytes a block streams before layers part
  int64_t fetched = 0;
  for (int64_t w0 = 0; w0 < blocks; w0 += wave) {
    std::map<int64_t, int64_t> need;              // unit → bytes this wave needs of it
    std::map<int64_t, std::set<int64_t>> layers;  // unit → layers of co-resident blocks holding it
    for (int64_t blk = w0; blk < std::min(blocks, w0 + wave); ++blk) {
      const int64_t u = unit_of(blk);
      int64_t& n = need[u];
      n = std::max(n, bytes_of(blk));
      layers[u].insert((blk - w0) / sms);
    }
    int64_t working = 0;
    for (const auto& [u, n] : need) working += n;
    out.bwd_working = std::max(out.bwd_working, working);  // the caller keeps it for the backward only
    const bool spill = double(working) > usable;
    out.spills = out.spills || spill;
    for (const auto& [u, n] : need) {
      ++waves_touching[u];
      if (spill || seen.insert(u).second) fetched += n;
      seen.insert(u);
      if (spill && drift_point >= 0 && double(n) > drift_point && layers[u].size() > 1) {
        const double per_layer = w0 == 0 ? double(n) - drift_point : double(n);
        const int64_t again = int64_t(double(layers[u].size() - 1) * per_layer);
        fetched += again;
        out.drift_bytes += again;
      }
    }
  }
  double sum = 0;
  for (const auto& [u, n] : waves_touching) sum += double(n);
  out.waves_per_head = waves_touching.empty() ? 0 : sum / double(waves_touching.size());
  return fetched;
}

// Resident blocks per SM of a streaming kernel: the recorded occupancy where the record has it,
// else its registers, shared memory and threads.
inline int resident_blocks(int threads, int64_t smem_bytes, const GpuLimits& gpu,
                           const std::optional<KernelResources>& r) {
  if (gpu.blocks_per_sm_override > 0) return gpu.blocks_per_sm_override;
  if (r && r->max_blocks_per_sm > 0) return r->max_blocks_per_sm;
  return blocks_per_sm(threads, smem_bytes, gpu, r ? r->registers_per_thread : 0);
}

// The co-resident drift applied to a forward kernel (dram_model.h): the fitted value where the
// record says nothing about the kernel (the files the fit came from), and where it says the
// kernel uses local memory (the 128 × 64, d 128 kernel the fit describes: 255 registers and an
// 8-byte stack frame); lock-step layers (0) where it says it uses none (the 128 × 32 kernel:
// 240 registers, no local memory, measured in lock-step to 256k). A hypothesis from two
// kernels (analysis/README.md), tested by the runs listed there.
inline double forward_drift(const std::optional<KernelResources>& r, const GpuLimits& gpu) {
  if (!r || gpu.drift_all_kernels) return gpu.drift;
  return r->local_bytes_per_thread > 0 ? gpu.drift : 0.0;
}

// --- the L2 simulation's traces (l2_sim.h) ------------------------------------------------------

// Appends the chunks holding rows [r0, r1) of `head` in buffer `buf` (rows past the buffer's
// end are not requested), skipping a chunk equal to the last one appended with the same op (a
// coarse step's consecutive tiles in one chunk).
inline void push_rows(std::vector<SimAccess>& out, const std::vector<SimBuffer>& bufs, int32_t buf, int64_t head,
                      int64_t r0, int64_t r1, SimOp op) {
  const SimBuffer& b = bufs[size_t(buf)];
  r1 = std::min(r1, b.rows);
  if (r1 <= r0) return;
  const int64_t cph = b.chunks_per_head();
  for (int64_t c = b.chunk_of_row(r0); c <= b.chunk_of_row(r1 - 1); ++c) {
    const SimAccess a{buf, head * cph + c, op};
    if (!out.empty() && out.back().buffer == a.buffer && out.back().chunk == a.chunk && out.back().op == op) continue;
    out.push_back(a);
  }
}

// A kernel that walks buffers chunk by chunk, one block per chunk (preprocess, convert,
// cudaMemsetAsync): block c touches chunk c of every buffer in `ops` (buffers chunked alike).
// 256-thread blocks: 8 per SM.
inline SimKernel streaming_kernel(std::string name, bool counted, int64_t chunks,
                                  std::vector<std::pair<int32_t, SimOp>> ops) {
  SimKernel k;
  k.name = std::move(name);
  k.counted = counted;
  k.blocks = chunks;
  k.blocks_per_sm = 8;
  k.steps = [](int64_t) { return int64_t(1); };
  k.step = [ops](int64_t c, int64_t, std::vector<SimAccess>& out) {
    for (const auto& [buf, op] : ops) out.push_back({buf, c, op});
  };
  return k;
}

inline int64_t gcd_rows(int64_t a, int64_t b) { return a <= 0 ? b : b <= 0 ? a : std::gcd(a, b); }

}  // namespace flashio::analysis::parts
