// The exact SM↔L2 predictor: closed forms per (batch, head) of what each kernel's schedule
// touches (kernels/flash2/flash2_{fwd,bwd}_kernel.cuh, kernels/flash1/flash1_kernels.cuh,
// baselines/standard/standard_plan.cpp). Cross-checked by analysis/schedule_sim.cpp.
#include "analysis/io_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace flashio::analysis {

namespace {

constexpr int64_t kSector = 32;
constexpr int64_t kF32 = 4;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Sectors touched by one instruction over values [a, a + n) of 4 bytes (n >= 1).
int64_t run_sectors(int64_t a, int64_t n) { return (a + n - 1) * kF32 / kSector - a * kF32 / kSector + 1; }

// The dQ convert / preprocess kernels' lanes per row (flash2_bwd_launch.cuh): a power of two ≥ d/8.
int64_t preprocess_lanes(int64_t d) {
  const int64_t chunks = d / 8;
  return chunks <= 4 ? 4 : chunks <= 8 ? 8 : chunks <= 16 ? 16 : 32;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

void check_tiles(const KernelTiles& t, const char* kernel) {
  require(t.block_r > 0 && t.block_c > 0 && t.warps > 0,
          fmt::format("{}: the record's tiles are incomplete (block_r {}, block_c {}, warps {})", kernel, t.block_r,
                      t.block_c, t.warps));
  require(t.l_store_rows > 0 && t.block_r % t.l_store_rows == 0 && t.vector_load_rows > 0,
          fmt::format("{}: L is stored {} rows per instruction, which must divide Br = {}", kernel, t.l_store_rows,
                      t.block_r));
}

// The fp32 vector a tile's epilogue or prologue touches for rows [row0, row0 + rows) of a head
// starting at element `head`: instructions cover `group` rows, group-aligned from the tile start.
int64_t tile_vector_bytes(int64_t head, int64_t row0, int64_t rows, int64_t group) {
  return grouped_fp32_sectors(head + row0, rows, group) * kSector;
}

// Σ over K/V tiles j < nb of smem_row_deliveries(min(bc, nk − j·bc)): whole tiles, the last cut at nk.
int64_t kv_xbar_rows(int64_t nb, int64_t nk, int64_t bc, SmemLayout l) {
  if (nb <= 0) return 0;
  if (nb * bc <= nk) return nb * smem_row_deliveries(bc, l);
  return (nb - 1) * smem_row_deliveries(bc, l) + smem_row_deliveries(nk - (nb - 1) * bc, l);
}

// Σ over Q tiles of smem_row_deliveries(rows of the tile).
int64_t q_xbar_rows(int64_t nq, int64_t br, SmemLayout l) { return kv_xbar_rows(ceil_div(nq, br), nq, br, l); }

}  // namespace

void Traffic::add(const std::string& name, int64_t r, int64_t w, int64_t red_bytes) {
  read += r;
  write += w;
  red += red_bytes;
  for (auto& t : terms)
    if (t.name == name) {
      t.read += r, t.write += w, t.red += red_bytes;
      return;
    }
  terms.push_back({name, r, w, red_bytes});
}

Traffic& Traffic::operator+=(const Traffic& o) {
  for (const auto& t : o.terms) add(t.name, t.read, t.write, t.red);
  return *this;
}

nlohmann::json Traffic::to_json() const {
  nlohmann::json terms_json = nlohmann::json::array();
  for (const auto& t : terms)
    terms_json.push_back({{"name", t.name}, {"read", t.read}, {"write", t.write}, {"red", t.red}});
  return {{"read", read}, {"write", write}, {"red", red}, {"total", total()}, {"terms", terms_json}};
}

double BlockMask::density() const {
  if (keep.empty()) return 1.0;
  return double(std::count(keep.begin(), keep.end(), true)) / double(keep.size());
}

bool has_exact_model(const std::string& method) {
  return method == "flash1" || method == "flash2" || method == "blocksparse_flash";
}

DqWidth dq_width(int sm_arch, bool scalar_kernel) {
  if (scalar_kernel) return {1, 1};
  return {sm_arch >= 90 ? 2 : 1, 2};  // atomic_add2: red.global.add.v2.f32 from sm_90 (__CUDA_ARCH__ >= 900)
}

const char* to_string(SmemLayout l) { return l == SmemLayout::Swizzle128 ? "swizzle128" : "padded"; }

std::optional<SmemLayout> parse_smem_layout(const std::string& s) {
  if (s.empty() || s == "padded") return SmemLayout::Padded;
  if (s == "swizzle128") return SmemLayout::Swizzle128;
  return std::nullopt;
}

// Padded rows of (d + 8)·e bytes: an odd row starts 16 bytes into a 32-byte shared-memory sector,
// so each of its global sectors is delivered twice (H100: exactly 1.5× on full tiles; the bytes
// requested from L2 are 1×). Swizzle128: the 16-byte chunks of a row are permuted by an XOR of
// their index inside a 128-byte segment, which maps the chunk pair {2k, 2k + 1} of a 32-byte
// global sector onto a pair {2k', 2k' + 1}: one shared sector, one delivery.
int64_t smem_row_deliveries(int64_t rows, SmemLayout l) { return l == SmemLayout::Swizzle128 ? rows : rows + rows / 2; }

int64_t dq_sectors_per_row(int64_t head_dim, int floats_per_lane) {
  require(floats_per_lane == 1 || floats_per_lane == 2, "dQ adds: 1 or 2 floats per lane");
  const int64_t instructions_per_n8_tile = 2 / floats_per_lane;  // (x, x + 1), or one pair
  return (head_dim / 8) * instructions_per_n8_tile;              // one sector per row each
}

int64_t grouped_fp32_sectors(int64_t first, int64_t n, int64_t group) {
  if (n <= 0) return 0;
  const int64_t full = n / group, rest = n % group;
  int64_t s = 0;
  if (full > 0) {
    // Every full group starts at the same offset within its sector iff group is a multiple of 8.
    if (group % 8 == 0) {
      s += full * run_sectors(first, group);
    } else {
      for (int64_t k = 0; k < full; ++k) s += run_sectors(first + k * group, group);
    }
  }
  if (rest > 0) s += run_sectors(first + full * group, rest);
  return s;
}

// flash2 forward (one block per Q tile i, head, batch): Q_i once, K_j/V_j for every visible
// key tile (rows < the sequence's key length; causal: tiles up to the Q tile's last row),
// O_i once (16-byte stores of whole rows), L_i once (`l_store_rows` rows per instruction: 8 for
// the t == 0 lanes of the mma.sync and wgmma accumulators). Tile loads as smem_row_deliveries counts them.
Traffic flash2_fwd_traffic(const Problem& p, const KernelTiles& t, const BlockMask& mask) {
  check_tiles(t, "flash2 forward");
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, row_bytes = d * e;
  const int64_t br = t.block_r, bc = t.block_c, tr = ceil_div(nq, br);
  const auto lens = key_lengths(p);
  Traffic out;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t nk = std::min<int64_t>(lens[size_t(b)], p.nk());
    // K/V rows one Q tile loads: whole tiles below n_end, the last one cut at nk.
    int64_t kv_rows = 0;  // as the crossbar counts them (smem_row_deliveries)
    if (mask.empty() && !p.causal) {
      kv_rows = tr * kv_xbar_rows(ceil_div(nk, bc), nk, bc, t.smem_layout);
    } else {
      for (int64_t i = 0; i < tr; ++i) {
        const int64_t n_end = p.causal ? std::min(nk, i * br + br) : nk;
        const int64_t nb = ceil_div(n_end, bc);
        if (mask.empty()) {
          kv_rows += kv_xbar_rows(nb, nk, bc, t.smem_layout);
        } else {
          for (int64_t j = 0; j < nb; ++j)
            if (mask.at(i, j)) kv_rows += smem_row_deliveries(std::min(bc, nk - j * bc), t.smem_layout);
        }
      }
    }
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t head = (b * p.heads + h) * nq;
      out.add("Q tiles", q_xbar_rows(nq, br, t.smem_layout) * row_bytes, 0);
      out.add("K,V tiles", 2 * kv_rows * row_bytes, 0);
      out.add("O", 0, nq * row_bytes);
      out.add("L (log-sum-exp)", 0, grouped_fp32_sectors(head, nq, t.l_store_rows) * kSector);
    }
  }
  return out;
}

// flash2 backward, deterministic mode (Problem::deterministic; kernels/flash2/flash2_bwd_kernel.cuh):
// the dQ_i add of each visited (Q tile i, K/V tile j) is a plain fp32 read and write instead of
// atomics — ld.global.cg / st.global.cg (no L1), one 8-byte instruction each per row and 8
// columns (dq_sectors_per_row; two 4-byte ones before 9077f49), the same sectors as the atomics — plus the tile's
// turn: one acquire load of its semaphore and one release store, a sector each (the extra loads
// of a block that spins while an earlier K/V tile adds are timing-dependent: not modelled); the
// semaphores ([B, H, ⌈Nq/Br⌉] ints) are zeroed before the kernel.
void add_deterministic_dq(Traffic& out, int64_t q_rows, int64_t visits, int64_t d, int plain_floats) {
  const int64_t bytes = q_rows * dq_sectors_per_row(d, plain_floats) * kSector;
  out.add("dQ read + write (deterministic)", bytes, bytes);
  out.add("dQ semaphores (deterministic)", visits * kSector, visits * kSector);
}

// flash2 backward: preprocess D = rowsum(dO∘O); dQ accumulator zeroed; main kernel (one block
// per K/V tile j, K/V head, batch) loads K_j, V_j once and, for every query head of the group
// and every Q tile i it sees, Q_i, dO_i, L_i, D_i, and adds dS·K_j to dQ_i with atomics
// (dq_sectors_per_row: one vector instruction per sector on sm_90, the fp32 bytes; two scalar
// ones before, 2× the fp32 bytes); dK_j, dV_j
// written; convert dQ.
Traffic flash2_bwd_traffic(const Problem& p, const KernelTiles& t, const BlockMask& mask, DqWidth dq) {
  check_tiles(t, "flash2 backward");
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk(), row_bytes = d * e;
  const int64_t br = t.block_r, bc = t.block_c, m_blocks = ceil_div(nq, br), tc = ceil_div(nkmax, bc);
  const int64_t group = p.heads / p.kvh(), vec_group = std::min<int64_t>(t.vector_load_rows, br);
  const int64_t rows_total = p.batch * p.heads * nq;
  const auto lens = key_lengths(p);
  Traffic out;

  const int64_t rows_per_warp = 32 / preprocess_lanes(d);
  out.add("preprocess: O, dO", 2 * rows_total * row_bytes, 0);
  out.add("preprocess: D", 0, ceil_div(rows_total, rows_per_warp) * kSector);
  // The dQ accumulator's (and the deterministic mode's semaphores') cudaMemsetAsync is no
  // kernel of the pass: the counters' per-kernel ranges do not see it (H100: l2_write = the
  // kernels' stores exactly, without it).

  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
    for (int64_t hk = 0; hk < p.kvh(); ++hk) {
      out.add("K,V tiles", 2 * kv_xbar_rows(tc, nkmax, bc, t.smem_layout) * row_bytes, 0);
      out.add("dK, dV", 0, 2 * nkmax * row_bytes);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t head = (b * p.heads + hk * group + g) * nq;
        std::vector<int64_t> rows_from(size_t(m_blocks + 1), 0), vec_from(size_t(m_blocks + 1), 0);
        std::vector<int64_t> xrows_from(size_t(m_blocks + 1), 0);
        for (int64_t i = m_blocks - 1; i >= 0; --i) {
          const int64_t r = std::min(br, nq - i * br);
          rows_from[size_t(i)] = rows_from[size_t(i + 1)] + r;
          xrows_from[size_t(i)] = xrows_from[size_t(i + 1)] + smem_row_deliveries(r, t.smem_layout);
          vec_from[size_t(i)] = vec_from[size_t(i + 1)] + tile_vector_bytes(head, i * br, r, vec_group);
        }
        int64_t q_rows = 0, q_xrows = 0, vec_bytes = 0, visits = 0;
        for (int64_t j = 0; j < tc && j * bc < nk; ++j) {
          const int64_t m_first = p.causal ? std::min(j * bc / br, m_blocks) : 0;
          if (mask.empty()) {  // Q tiles m_first..m_blocks−1
            visits += m_blocks - m_first;
            q_rows += rows_from[size_t(m_first)];
            q_xrows += xrows_from[size_t(m_first)];
            vec_bytes += 2 * vec_from[size_t(m_first)];
            continue;
          }
          for (int64_t i = m_first; i < m_blocks; ++i) {
            if (!mask.at(i, j)) continue;
            ++visits;
            q_rows += rows_from[size_t(i)] - rows_from[size_t(i + 1)];
            q_xrows += xrows_from[size_t(i)] - xrows_from[size_t(i + 1)];
            vec_bytes += 2 * (vec_from[size_t(i)] - vec_from[size_t(i + 1)]);
          }
        }
        out.add("Q, dO tiles", 2 * q_xrows * row_bytes, 0);
        out.add("L, D", vec_bytes, 0);
        if (p.deterministic) {
          add_deterministic_dq(out, q_rows, visits, d, dq.plain);
        } else {
          out.add("dQ accumulate (atomic)", 0, 0, q_rows * dq_sectors_per_row(d, dq.atomic) * kSector);
        }
      }
    }
  }
  out.add("dQ convert", rows_total * d * kF32, rows_total * row_bytes);
  return out;
}

// flash1 forward (grid (heads, batch, S): block z of a head takes the Q tiles i ≡ z (mod S);
// outer loop over K/V tiles j, inner over its Q tiles i ≥ i_first(j)): K_j, V_j once per block
// that has a Q tile for j (rows < seqlen_k; S = 1 loads them even when it has none, as the
// kernel without splits does), Q_i once per visit, and per visited (i, j): m_i, ℓ_i, O_i (fp32)
// read when j > 0; written back, or on the last visit O (element type, 16 of 32 bytes per
// sector) and L instead of the fp32 O. Everything per (i, j) is independent of S.
Traffic flash1_fwd_traffic(const Problem& p, const KernelTiles& t) {
  check_tiles(t, "flash1 forward");
  require(t.splits >= 1, "flash1 forward: splits must be >= 1");
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk(), row_bytes = d * e;
  const int64_t br = t.block_r, bc = t.block_c, m_blocks = ceil_div(nq, br), splits = t.splits;
  const auto lens = key_lengths(p);
  Traffic out;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
    const int64_t n_blocks = ceil_div(nk, bc);
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t head = (b * p.heads + h) * nq;
      if (n_blocks == 0) {  // O = 0, L = −∞: S = 1 over the head, S > 1 per own Q tile
        out.add("O", 0, nq * row_bytes);
        int64_t l_sectors = 0;
        if (splits == 1) {
          l_sectors = grouped_fp32_sectors(head, nq, 32);
        } else {
          for (int64_t i = 0; i < m_blocks; ++i)
            l_sectors += grouped_fp32_sectors(head + i * br, std::min(br, nq - i * br), 32);
        }
        out.add("L (log-sum-exp)", 0, l_sectors * kSector);
        continue;
      }
      int64_t kv_rows = 0;
      for (int64_t j = 0; j < n_blocks; ++j) {
        const int64_t i_first = p.causal ? std::min(j * bc / br, m_blocks) : 0;
        const int64_t loaders = splits == 1 ? 1 : std::min(splits, m_blocks - i_first);  // blocks with a Q tile
        kv_rows += loaders * smem_row_deliveries(std::min(bc, nkmax - j * bc), t.smem_layout);
      }
      out.add("K,V tiles", 2 * kv_rows * row_bytes, 0);
      // K/V tile j visits Q tile i iff j <= last_j(i) (i >= i_first(j) = ⌊j·Bc/Br⌋ ⇔ j·Bc <= i·Br + Br − 1):
      // v_i visits; the first writes back without reading, the last writes O, L (and l, m).
      int64_t q = 0, reread = 0, writeback = 0, final_write = 0;
      for (int64_t i = 0; i < m_blocks; ++i) {
        const int64_t m0 = i * br, rows = std::min(br, nq - m0);
        const int64_t last_j = p.causal ? std::min(n_blocks - 1, (m0 + br - 1) / bc) : n_blocks - 1;
        const int64_t visits = last_j + 1;
        const int64_t vec = tile_vector_bytes(head, m0, rows, 8);
        const int64_t o_fp32 = rows * d * kF32;  // one sector per row per 8 columns (float2 × 4 lanes)
        q += visits * smem_row_deliveries(rows, t.smem_layout) * row_bytes;
        reread += (visits - 1) * (o_fp32 + 2 * vec);
        writeback += (visits - 1) * (o_fp32 + 2 * vec);
        final_write += rows * (d / 8) * kSector + 3 * vec;  // O in the element type: 16 of 32 bytes per sector
      }
      out.add("Q tiles", q, 0);
      out.add("O, l, m re-read", reread, 0);
      out.add("O, L, l, m final write", 0, final_write);
      out.add("O, l, m write-back", 0, writeback);
    }
  }
  return out;
}

// flash1 backward (grid (heads, batch, S): block z of a head takes the K/V tiles j ≡ z (mod S),
// inner loop over the Q tiles each sees): K_j, V_j once in all; Q_i, dO_i, O_i tiles, ℓ_i and
// m_i per visit; dQ_i (fp32) per visit read-modify-written with plain loads and stores when
// S = 1 (one 8-byte load and store per row and 8 columns: a sector each; before 9077f49 two
// 4-byte ones, the second load hitting L1, both stores reaching L2), added with flash2's fp32
// atomics when S > 1 (dq_sectors_per_row); dK_j, dV_j written; dQ accumulator zeroed
// before, converted after.
Traffic flash1_bwd_traffic(const Problem& p, const KernelTiles& t, DqWidth dq) {
  check_tiles(t, "flash1 backward");
  require(t.splits >= 1, "flash1 backward: splits must be >= 1");
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk(), row_bytes = d * e;
  const int64_t br = t.block_r, bc = t.block_c, m_blocks = ceil_div(nq, br), n_blocks = ceil_div(nkmax, bc);
  const int64_t vec_group = std::min<int64_t>(32, br);
  const int64_t rows_total = p.batch * p.heads * nq;
  const auto lens = key_lengths(p);
  Traffic out;
  // The dQ accumulator's cudaMemsetAsync is no kernel of the pass: the counters' per-kernel
  // ranges do not see it (H100: l2_write = the kernels' stores exactly, without it).
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t head = (b * p.heads + h) * nq;
      out.add("K,V tiles", 2 * kv_xbar_rows(n_blocks, nkmax, bc, t.smem_layout) * row_bytes, 0);
      out.add("dK, dV", 0, 2 * nkmax * row_bytes);
      // Rows and L/D-vector bytes of Q tiles i..m_blocks−1, as suffix sums.
      std::vector<int64_t> rows_from(size_t(m_blocks + 1), 0), vec_from(size_t(m_blocks + 1), 0);
      std::vector<int64_t> xrows_from(size_t(m_blocks + 1), 0);
      for (int64_t i = m_blocks - 1; i >= 0; --i) {
        const int64_t r = std::min(br, nq - i * br);
        rows_from[size_t(i)] = rows_from[size_t(i + 1)] + r;
        xrows_from[size_t(i)] = xrows_from[size_t(i + 1)] + smem_row_deliveries(r, t.smem_layout);
        vec_from[size_t(i)] = vec_from[size_t(i + 1)] + tile_vector_bytes(head, i * br, r, vec_group);
      }
      int64_t rows = 0, xrows = 0, vec = 0;
      for (int64_t j = 0; j < n_blocks && j * bc < nk; ++j) {
        const int64_t i_first = p.causal ? std::min(j * bc / br, m_blocks) : 0;
        rows += rows_from[size_t(i_first)];
        xrows += xrows_from[size_t(i_first)];
        vec += vec_from[size_t(i_first)];
      }
      out.add("Q, dO, O tiles", 3 * xrows * row_bytes, 0);
      out.add("l, m", 2 * vec, 0);
      if (t.splits == 1) {
        out.add("dQ read-modify-write", rows * d * kF32, rows * dq_sectors_per_row(d, dq.plain) * kSector);
      } else {
        out.add("dQ accumulate (atomic)", 0, 0, rows * dq_sectors_per_row(d, dq.atomic) * kSector);
      }
    }
  }
  out.add("dQ convert", rows_total * d * kF32, rows_total * row_bytes);
  return out;
}

bool is_standard(const std::string& method) { return method == "standard" || method == "standard_fused"; }

Elementwise standard_elementwise(const nlohmann::json& record, const nlohmann::json& file) {
  if (record.value("method", std::string()) == "standard_fused") return Elementwise::Fused;
  const nlohmann::json tiles = record.value("tiles", nlohmann::json::object());
  const std::string e = tiles.is_object() ? tiles.value("elementwise", std::string()) : std::string();
  if (e == "separate") return Elementwise::Separate;
  if (e == "fused") return Elementwise::Fused;
  // Absent: flashio's `standard` was the fused code until tiles.elementwise existed; a published
  // file's `standard` is the paper's PyTorch, one kernel per step.
  return file.is_object() && file.value("producer", std::string()) == "published" ? Elementwise::Separate
                                                                                  : Elementwise::Fused;
}

// Standard attention: compulsory operand reads and result writes of each kernel.
Traffic standard_fwd_traffic(const Problem& p, Elementwise k) {
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t elements = p.batch * p.heads * p.seqlen_q * p.nk(), s = elements * e;
  const bool dropout = p.dropout > 0, masked = p.causal || p.padding != Padding::None;
  Traffic out;
  out.add("S = Q·Kᵀ (GEMM)", q + kv, s);
  if (k == Elementwise::Fused) {
    out.add(dropout ? "P, P_drop = softmax(S) (+dropout)" : "P = softmax(S)", s, dropout ? 2 * s : s);
  } else {
    if (masked) out.add("S = mask(S) (in place)", s, s);
    out.add("P = softmax(S)", s, s);
    if (dropout) out.add("P_drop, mask = dropout(P)", s, s + elements);  // the mask: one byte per element
  }
  out.add("O = P·V (GEMM)", s + kv, q);
  return out;
}

Traffic standard_bwd_traffic(const Problem& p, Elementwise k) {
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t elements = p.batch * p.heads * p.seqlen_q * p.nk(), s = elements * e;
  Traffic out;
  out.add("dV = P_dropᵀ·dO (GEMM)", s + q, kv);
  out.add("dP = dO·Vᵀ (GEMM)", q + kv, s);
  if (k == Elementwise::Separate && p.dropout > 0) out.add("dP = dropout backward(dP_drop, mask)", s + elements, s);
  out.add("dS = softmax backward", 2 * s, s);
  out.add("dQ = dS·K (GEMM)", s + kv, q);
  out.add("dK = dSᵀ·Q (GEMM)", s + q, kv);
  return out;
}

namespace {

KernelTiles need_tiles(const std::optional<KernelTiles>& t, const ModelPoint& m, const char* which) {
  require(t.has_value(), fmt::format("{} {}: the record does not carry the {} kernel's tiles{}", m.method,
                                     to_string(m.pass), which, std::string(which) == "backward" ? " (tiles_bwd)" : ""));
  return *t;
}

}  // namespace

Traffic predict_sm_l2(const ModelPoint& m) {
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  Traffic out;
  if (m.method == "flash2" || m.method == "blocksparse_flash") {
    // blocksparse_flash is flash2's schedule visiting only the non-zero tiles of its masks.
    require(m.method == "flash2" || m.problem.sparse(), "blocksparse_flash: the problem has no block-sparse pattern");
    if (fwd) out += flash2_fwd_traffic(m.problem, need_tiles(m.fwd_tiles, m, "forward"), m.mask);
    if (bwd) out += flash2_bwd_traffic(m.problem, need_tiles(m.bwd_tiles, m, "backward"), m.bwd_mask, m.dq());
  } else if (m.method == "flash1") {
    require(m.mask.empty() && m.bwd_mask.empty(), "flash1: no block-sparse schedule");
    if (fwd) out += flash1_fwd_traffic(m.problem, need_tiles(m.fwd_tiles, m, "forward"));
    if (bwd) out += flash1_bwd_traffic(m.problem, need_tiles(m.bwd_tiles, m, "backward"), m.dq());
  } else if (m.method == "standard") {
    if (fwd) out += standard_fwd_traffic(m.problem, m.elementwise);
    if (bwd) out += standard_bwd_traffic(m.problem, m.elementwise);
  } else {
    throw std::invalid_argument(
        fmt::format("{}: no IO model (peers and the CPU reference are not modelled)", m.method));
  }
  return out;
}

Traffic compulsory_dram(const ModelPoint& m) {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t rows = p.batch * p.heads * p.seqlen_q;
  const bool bwd = m.pass != Pass::Fwd;
  Traffic out;
  if (m.pass != Pass::Bwd) {
    out.add("Q, K, V", q + 2 * kv, 0);
    out.add("O, L", 0, q + rows * kF32);
    if (m.method == "flash1") out.add("l, m (kept for the backward)", 0, 2 * rows * kF32);
    if (m.method == "standard") {
      // S and P are N² matrices that no L2 holds beyond small N: written and read back.
      const int64_t elements = p.batch * p.heads * p.seqlen_q * p.nk(), s = elements * e;
      out.add("S, P", 2 * s, (p.dropout > 0 ? 3 : 2) * s);
      if (m.elementwise == Elementwise::Separate) {  // the passes the fused kernel saves
        if (p.causal || p.padding != Padding::None) out.add("masking: S read and written back", s, s);
        if (p.dropout > 0) out.add("dropout: P read, mask written", s, elements);
      }
    }
  }
  if (bwd && m.method == "standard") {
    if (m.pass == Pass::Bwd) out.add("Q, K, V", q + 2 * kv, 0);
    out.add("O, dO, L", 2 * q + rows * kF32, 0);
    out.add("dQ, dK, dV", 0, q + 2 * kv);
    const int64_t elements = p.batch * p.heads * p.seqlen_q * p.nk(), s = elements * e;
    out.add("P, dP, dS", 4 * s, 2 * s);
    if (m.elementwise == Elementwise::Separate && p.dropout > 0)
      out.add("dropout backward: dP_drop and mask read, dP written", s + elements, s);
  } else if (bwd) {
    // Per kernel, each reading its inputs and writing its outputs once (beyond the L2, nothing
    // survives from one kernel to the next: H100, flash2 fwd+bwd, b 16, h 8, N 4096, d 64 reads
    // within 0.2 % of this, the main kernel re-reading Q, K, V and dO). The fp32 dQ accumulator
    // (2× Q's bytes at fp16): zeroed, written back by the main kernel, read by the convert.
    const int64_t acc = rows * p.head_dim * kF32, lvec = rows * kF32;
    if (m.method == "flash1") {  // D computed inside the main kernel; ℓ, m instead of L
      out.add("main: Q, K, V, O, dO, l, m", 2 * q + 2 * kv + q + 2 * lvec, 0);
    } else {
      out.add("preprocess: O, dO -> D", 2 * q, lvec);
      out.add("main: Q, K, V, dO, L, D", 2 * q + 2 * kv + 2 * lvec, 0);
    }
    out.add("main: dK, dV", 0, 2 * kv);
    out.add("dQ accumulator (fp32)", 2 * acc, acc);  // read by main (zeroed lines evicted) and convert
    out.add("convert: dQ", 0, q);
  }
  return out;
}

double asymptotic_form(const ModelPoint& m) {
  const Problem& p = m.problem;
  const double n = double(p.seqlen_q), nk = double(p.nk()), d = double(p.head_dim);
  const double heads = double(p.batch * p.heads);
  const double s = m.mask.density() * (p.causal ? 0.5 : 1.0);
  double v = 0;
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  if (m.method == "standard") return heads * (n * d + n * nk) * (bwd && fwd ? 2 : 1);
  // Fused: N·d + s·N·Nk·d / B, B the tile dimension that re-reading divides by.
  if (fwd && m.fwd_tiles) {
    const double tile = m.method == "flash1" ? m.fwd_tiles->block_c : m.fwd_tiles->block_r;
    v += n * d + s * n * nk * d / tile;
  }
  if (bwd && m.bwd_tiles)
    v += n * d + m.bwd_mask.density() * (p.causal ? 0.5 : 1.0) * n * nk * d / double(m.bwd_tiles->block_c);
  return heads * v;
}

std::string asymptotic_formula(const ModelPoint& m) {
  const std::string s = m.mask.empty() ? "" : "s·";
  if (m.method == "standard") return "N·d + N²  (Θ(Nd + N²))";
  if (m.method == "flash1" && m.pass == Pass::Fwd) return "N·d + " + s + "N²·d/Bc  (Theorem 2: Θ(N²d²/M), Bc = Θ(M/d))";
  if (m.method == "flash2" && m.pass == Pass::Fwd) return "N·d + " + s + "N²·d/Br  (FA-2: K,V read Tr times)";
  if (m.pass == Pass::Bwd) return "N·d + " + s + "N²·d/Bc  (Theorem 5: Θ(N²d²/M))";
  return "forward + backward forms  (Theorems 2 and 5)";
}

}  // namespace flashio::analysis
