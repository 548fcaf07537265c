// The schedule simulator: each function mirrors one kernel's loops (grid, tile loops, the
// copy loops' chunk-per-thread rounds, the epilogues' per-lane stores) and asks `Warp` for the
// sectors each warp instruction touches. Term names match analysis/models/*.cpp so tests can
// compare term by term.
#include "analysis/schedule_sim.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "analysis/models/model.h"
#include "kernels/flash3/flash3_dq_layout.h"
#include "kernels/flash_decode/flash_decode_configs.h"

namespace flashio::analysis {

namespace {

constexpr int64_t kSector = 32;

// Buffers live in separate allocations (256-byte aligned by cudaMalloc): a sector is (buffer, offset / 32).
enum Buf { kQ, kK, kV, kO, kLse, kDO, kD, kDqAcc, kDq, kDk, kDv, kOAcc, kRowMax, kRowSum, kDqSemaphore };
enum DecodeBuf { kOPartial = kDqSemaphore + 1, kLsePartial, kBlockTable, kSplitsDone };  // flash_decode's own

struct Access {
  int buf;
  int64_t byte;
  int64_t smem = -1;                   // a copy to shared memory (cp.async): the shared byte the chunk lands on
  CopyPath path = CopyPath::BypassL1;  // the copy's route (io_model.h): past L1, delivered per shared sector
};

// Counts one kernel's traffic. `instr` takes the lanes of one warp instruction (only the
// active ones) and adds its distinct sectors; loads inside an L1 scope skip sectors the
// scope already read (a re-read served by L1).
class Counter {
 public:
  Traffic traffic;
  enum Op { Read, Write, Red, Atom };

  void instr(Op op, const std::string& term, const std::vector<Access>& lanes) {
    // A global sector, or for a copy past L1 a (global sector, shared-memory sector) delivery: a
    // sector whose two 16-byte halves land in two shared-memory sectors crosses the crossbar twice.
    // A copy through L1 fetches the global sector once (the other half is an L1 hit).
    std::set<std::pair<int, int64_t>> sectors;
    for (const auto& a : lanes) {
      const bool per_smem_sector = a.smem >= 0 && a.path == CopyPath::BypassL1;
      sectors.insert(
          {a.buf, per_smem_sector ? (a.byte / kSector) * (int64_t(1) << 24) + a.smem / kSector : a.byte / kSector});
    }
    int64_t n = 0;
    for (const auto& s : sectors) {
      if (op == Read && scoped_) {
        if (!l1_.insert(s).second) continue;
      }
      ++n;
    }
    const int64_t bytes = n * kSector;
    traffic.add(term, op == Read ? bytes : 0, op == Write ? bytes : 0, op == Red ? bytes : 0, op == Atom ? bytes : 0);
  }
  void begin_l1_scope() { scoped_ = true, l1_.clear(); }
  void end_l1_scope() { scoped_ = false, l1_.clear(); }

 private:
  bool scoped_ = false;
  std::set<std::pair<int, int64_t>> l1_;
};

// The shared-memory byte a tile load puts row r, element col of a (tile_rows, d) tile at, for
// the kernel's layout: padded rows of (d + 8) elements from a 32-byte-aligned base, or the
// 128-byte swizzle (CUTLASS's Swizzle<3, 4, 3>, what wgmma's 128B mode reads): the tile is
// stored as 128-byte-wide column panels of tile_rows rows, and inside a panel row r the 16-byte
// chunk c sits at c ^ (r mod 8).
int64_t smem_byte(SmemLayout l, int64_t r, int64_t col, int64_t tile_rows, int64_t d, int64_t e) {
  if (l == SmemLayout::Padded) return (r * (d + 8) + col) * e;
  constexpr int64_t kPanel = 128, kChunk = 16;
  const int64_t byte = col * e, panel = byte / kPanel, in_panel = byte % kPanel;
  const int64_t chunk = (in_panel / kChunk) ^ (r % 8);
  return panel * tile_rows * kPanel + r * kPanel + chunk * kChunk + in_panel % kChunk;
}

// load_tile / 16-byte stores of a (rows, d) tile: chunk c of the tile goes to thread c % threads
// in round c / threads; a warp instruction is 32 consecutive threads of one round. Rows at or
// past `rows_valid` (counted from the matrix start) are not touched. Loads land in shared memory
// of layout `l` (smem_byte) by copies taking `path`.
void tile_copy(Counter& c, Counter::Op op, const std::string& term, int buf, int64_t matrix_row0, int64_t row0,
               int64_t tile_rows, int64_t rows_valid, int64_t d, int64_t e, int64_t threads,
               SmemLayout l = SmemLayout::Padded, CopyPath path = CopyPath::BypassL1) {
  const int64_t per_row = d / 8, chunks = tile_rows * per_row;
  for (int64_t round = 0; round * threads < chunks; ++round)
    for (int64_t w = 0; w < threads / 32; ++w) {
      std::vector<Access> lanes;
      for (int64_t lane = 0; lane < 32; ++lane) {
        const int64_t ch = round * threads + w * 32 + lane;
        if (ch >= chunks) continue;
        const int64_t r = ch / per_row, col = (ch % per_row) * 8;
        if (row0 + r >= rows_valid) continue;
        const int64_t smem = op == Counter::Read ? smem_byte(l, r, col, tile_rows, d, e) : -1;
        lanes.push_back({buf, ((matrix_row0 + row0 + r) * d + col) * e, smem, path});
      }
      if (!lanes.empty()) c.instr(op, term, lanes);
    }
}

// Row-vector accesses by threads r = 0.. (one value per thread, r < count): warp instructions of
// `group` consecutive rows (32: one warp of one value per lane).
void vector_rows(Counter& c, Counter::Op op, const std::string& term, int buf, int64_t first, int64_t tile_rows,
                 int64_t rows_valid_from_first, int64_t group = 32) {
  for (int64_t base = 0; base < tile_rows; base += group) {
    std::vector<Access> lanes;
    for (int64_t r = base; r < std::min(base + group, tile_rows); ++r)
      if (r < rows_valid_from_first) lanes.push_back({buf, (first + r) * 4});
    if (!lanes.empty()) c.instr(op, term, lanes);
  }
}

// flash2_bwd_convert_dq_kernel: thread k converts elements [8k, 8k + 8): two float4 loads
// (the second re-reads the first's sector: L1) and one 16-byte store.
void dq_convert(Counter& c, const Problem& p) {
  const int64_t elements = p.batch * p.heads * p.seqlen_q * p.head_dim, e = bytes_of(p.dtype);
  const int64_t threads = (elements / 8 + 255) / 256 * 256;
  for (int64_t w = 0; w < threads / 32; ++w) {
    std::vector<Access> a, b, s;
    for (int64_t lane = 0; lane < 32; ++lane) {
      const int64_t e0 = (w * 32 + lane) * 8;
      if (e0 >= elements) continue;
      a.push_back({kDqAcc, e0 * 4});
      b.push_back({kDqAcc, (e0 + 4) * 4});
      s.push_back({kDq, e0 * e});
    }
    if (a.empty()) continue;
    c.begin_l1_scope();
    c.instr(Counter::Read, "dQ convert", a);
    c.instr(Counter::Read, "dQ convert", b);
    c.end_l1_scope();
    c.instr(Counter::Write, "dQ convert", s);
  }
}

// flash3's whole-tile dQ (ModelTiles::dq_whole_tiles, kernels/flash3/flash3_dq_layout.h): the
// accumulator holds ⌈Nq/Br⌉ tiles of Br·d floats per head. A visit's bulk reductions add the whole
// tile (an instruction per consumer's part: d/2 columns' floats, contiguous) …
void dq_tile_reductions(Counter& c, int64_t plane, int64_t tile, int64_t nq, int64_t d, int64_t br) {
  const int64_t first = ((plane * kernels::flash3_dq_tiles(nq) + tile) * br * d) * 4, part = br * d / 2 * 4;
  for (int64_t w = 0; w < 2; ++w) {
    std::vector<Access> sectors;
    for (int64_t b = 0; b < part; b += kSector) sectors.push_back({kDqAcc, first + w * part + b});
    c.instr(Counter::Red, "dQ accumulate (bulk reductions)", sectors);
  }
}
// … and flash3's conversion reads them back: thread k takes 8-column chunk k % (d/8) of row pair
// k / (d/8) (pairs (r, r + 8), r = 16·(q / 8) + q % 8 for pair q of a tile), four 16-byte loads of
// 64 contiguous bytes (the chunk's float4 of lanes 4g..4g+3: flash3_dq_tile_offset) and a 16-byte
// store per row below Nq; a pair whose first row is past Nq returns.
void dq_tile_convert(Counter& c, const Problem& p, int64_t br) {
  const int64_t d = p.head_dim, nq = p.seqlen_q, e = bytes_of(p.dtype), chunks = d / 8;
  const int64_t tiles = kernels::flash3_dq_tiles(nq), pairs = br / 2;
  const int64_t items = p.batch * p.heads * tiles * pairs * chunks, threads = (items + 255) / 256 * 256;
  for (int64_t w = 0; w < threads / 32; ++w) {
    std::vector<Access> loads[4], first, second;
    for (int64_t lane = 0; lane < 32; ++lane) {
      const int64_t item = w * 32 + lane;
      if (item >= items) continue;
      const int64_t col = (item % chunks) * 8, q = item / chunks % pairs, tile = item / chunks / pairs;
      const int64_t r = 16 * (q / 8) + q % 8, i = (tile % tiles) * br + r, plane = tile / tiles;
      if (i >= nq) continue;
      const int64_t at = tile * br * d + kernels::flash3_dq_tile_offset(int(r), int(col), int(d / 2));
      for (int64_t t = 0; t < 4; ++t) loads[t].push_back({kDqAcc, (at + 4 * t) * 4});
      first.push_back({kDq, ((plane * nq + i) * d + col) * e});
      if (i + 8 < nq) second.push_back({kDq, ((plane * nq + i + 8) * d + col) * e});
    }
    if (first.empty()) continue;
    c.begin_l1_scope();
    for (const auto& l : loads) c.instr(Counter::Read, "dQ convert", l);
    c.end_l1_scope();
    c.instr(Counter::Write, "dQ convert", first);
    if (!second.empty()) c.instr(Counter::Write, "dQ convert", second);
  }
}

// dQ_i += dS·K_j through bwd_tile_step's lambda: the tile's query rows in m16 blocks (whichever
// warp owns a block — mma.sync warps split the rows 16 each, wgmma warpgroups 64 each, 16 per
// warp — the lanes and their addresses are the same), 32 columns per chunk; per n8 tile and row
// half, lane (g, t) adds columns 2t, 2t + 1, `per_lane` floats per instruction (1: x and x + 1
// in turn; 2: one 8-byte access). `add(x, lanes)` issues the instruction(s) of one lane set: an
// atomic, a load and a store, ...
template <typename Add>
void dq_adds(int64_t head, int64_t m0, int64_t nq, int64_t d, int64_t br, int per_lane, Add add) {
  if (br % 16 != 0) throw std::invalid_argument("dQ adds: Br must be whole m16 blocks");
  for (int64_t mb = 0; mb < br / 16; ++mb)
    for (int64_t ch = 0; ch < d / 32; ++ch)
      for (int64_t nt = 0; nt < 4; ++nt)
        for (int64_t hr = 0; hr < 2; ++hr) {
          std::vector<std::vector<Access>> instrs;
          for (int64_t x = 0; x < 2; x += per_lane) {
            std::vector<Access> lanes;
            for (int64_t g = 0; g < 8; ++g)
              for (int64_t tq = 0; tq < 4; ++tq) {
                const int64_t row = m0 + mb * 16 + g + hr * 8;
                const int64_t col = ch * 32 + nt * 8 + 2 * tq + x;
                // per_lane consecutive floats from here, 4·per_lane-byte aligned: within one sector.
                for (int64_t k = 0; k < per_lane; ++k)
                  if (row < nq) lanes.push_back({kDqAcc, ((head + row) * d + col + k) * 4});
              }
            if (!lanes.empty()) instrs.push_back(std::move(lanes));
          }
          add(instrs);
        }
}

// flash2's (and split flash1's) atomics: red.global.add(.v2).f32.
void dq_atomics(Counter& c, int64_t head, int64_t m0, int64_t nq, int64_t d, int64_t br, int per_lane) {
  dq_adds(head, m0, nq, d, br, per_lane, [&](const std::vector<std::vector<Access>>& instrs) {
    for (const auto& lanes : instrs) c.instr(Counter::Red, "dQ accumulate (atomic)", lanes);
  });
}

void check(const ModelTiles& t, const char* what) {
  if (t.block_r <= 0 || t.block_c <= 0 || t.warps <= 0) throw std::invalid_argument(std::string(what) + ": no tiles");
}

}  // namespace

Traffic simulate_flash2_fwd(const Problem& p, const ModelTiles& t, const BlockMask& mask, KvTileLoads loads) {
  check(t, "flash2 forward");
  Counter c;
  const int64_t d = p.head_dim, e = bytes_of(p.dtype), nq = p.seqlen_q, br = t.block_r, bc = t.block_c;
  const int64_t threads = t.warps * 32;
  const auto lens = key_lengths(p);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t mb = 0; mb < (nq + br - 1) / br; ++mb) {  // grid.x: one Q tile per block
        const int64_t head = (b * p.heads + h) * nq, hk = h / (p.heads / p.kvh());
        const int64_t kv_row0 = (b * p.kvh() + hk) * p.nk();
        const int64_t row0 = mb * br, q_rows = nq - row0;
        const int64_t nk = std::min<int64_t>(lens[size_t(b)], p.nk());
        const int64_t n_end = p.causal ? std::min(nk, row0 + br) : nk;
        const int64_t n_blocks = n_end > 0 ? (n_end + bc - 1) / bc : 0;
        const int64_t load_end = loads == KvTileLoads::CutAtKeyLength ? nk : (p.nk() + bc - 1) / bc * bc;  // rows a K/V load moves
        tile_copy(c, Counter::Read, "Q tiles", kQ, head + row0, 0, br, q_rows, d, e, threads, t.smem_layout);
        for (int64_t it = 0; it < n_blocks; ++it) {  // last-to-first over the visible K/V tiles
          const int64_t n = n_blocks - 1 - it;
          if (!mask.at(mb, n)) continue;
          tile_copy(c, Counter::Read, "K,V tiles", kK, kv_row0, n * bc, bc, load_end, d, e, threads, t.smem_layout);
          tile_copy(c, Counter::Read, "K,V tiles", kV, kv_row0, n * bc, bc, load_end, d, e, threads, t.smem_layout);
        }
        // Epilogue: L by one lane per row, `l_store_rows` consecutive rows per instruction (the
        // t == 0 lanes: 8), O by 16-byte chunks of whole rows.
        vector_rows(c, Counter::Write, "L (log-sum-exp)", kLse, head + row0, br, q_rows, t.l_store_rows);
        tile_copy(c, Counter::Write, "O", kO, head + row0, 0, br, q_rows, d, e, threads);
      }
  return c.traffic;
}

Traffic simulate_flash2_bwd(const Problem& p, const ModelTiles& t, const BlockMask& mask, DqWidth dq) {
  check(t, "flash2 backward");
  Counter c;
  const int64_t d = p.head_dim, e = bytes_of(p.dtype), nq = p.seqlen_q, nkmax = p.nk();
  const int64_t br = t.block_r, bc = t.block_c, threads = t.warps * 32, group = p.heads / p.kvh();
  const int64_t rows = p.batch * p.heads * nq;
  if (t.dq_whole_tiles && br != kernels::kFlash3DqTileRows)
    throw std::invalid_argument("flash2 backward: whole-tile dQ needs Br = 64 (flash3_dq_layout.h's tiles)");
  const auto lens = key_lengths(p);

  // 1. preprocess: kLanes lanes per row, 256 threads per block.
  const int64_t chunks = d / 8, lanes_per_row = chunks <= 4 ? 4 : chunks <= 8 ? 8 : chunks <= 16 ? 16 : 32;
  const int64_t pre_threads = (rows * lanes_per_row + 255) / 256 * 256;
  for (int64_t w = 0; w < pre_threads / 32; ++w) {
    std::vector<Access> o, dout, dsum;
    for (int64_t lane = 0; lane < 32; ++lane) {
      const int64_t tid = w * 32 + lane, row = tid / lanes_per_row, l = tid % lanes_per_row;
      if (row < rows && l < chunks) {
        o.push_back({kO, (row * d + l * 8) * e});
        dout.push_back({kDO, (row * d + l * 8) * e});
      }
      if (row < rows && l == 0) dsum.push_back({kD, row * 4});
    }
    if (!o.empty()) {
      c.instr(Counter::Read, "preprocess: O, dO", o);
      c.instr(Counter::Read, "preprocess: O, dO", dout);
    }
    if (!dsum.empty()) c.instr(Counter::Write, "preprocess: D", dsum);
  }

  // 2. main: one block per (K/V tile, K/V head, batch).
  const int64_t m_blocks = (nq + br - 1) / br;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t hk = 0; hk < p.kvh(); ++hk)
      for (int64_t nb = 0; nb < (nkmax + bc - 1) / bc; ++nb) {
        const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax), n0 = nb * bc;
        const int64_t kv_row0 = (b * p.kvh() + hk) * nkmax;
        const int64_t m_first = p.causal ? std::min(n0 / br, m_blocks) : 0;
        const int64_t per_head = n0 < nk ? m_blocks - m_first : 0;
        tile_copy(c, Counter::Read, "K,V tiles", kK, kv_row0, n0, bc, nkmax, d, e, threads, t.smem_layout);
        tile_copy(c, Counter::Read, "K,V tiles", kV, kv_row0, n0, bc, nkmax, d, e, threads, t.smem_layout);
        for (int64_t it = 0; it < group * per_head; ++it) {
          const int64_t h = hk * group + it / per_head, i = m_first + it % per_head, m0 = i * br;
          if (!mask.at(i, nb)) continue;
          const int64_t head = (b * p.heads + h) * nq;
          tile_copy(c, Counter::Read, "Q, dO tiles", kQ, head, m0, br, nq, d, e, threads, t.smem_layout);
          tile_copy(c, Counter::Read, "Q, dO tiles", kDO, head, m0, br, nq, d, e, threads, t.smem_layout);
          vector_rows(c, Counter::Read, "L, D", kLse, head + m0, br, nq - m0, t.vector_load_rows);
          vector_rows(c, Counter::Read, "L, D", kD, head + m0, br, nq - m0, t.vector_load_rows);
          if (t.dq_whole_tiles) {
            dq_tile_reductions(c, b * p.heads + h, i, nq, d, br);
            continue;
          }
          if (!p.deterministic) {
            dq_atomics(c, head, m0, nq, d, br, dq.atomic);
            continue;
          }
          // Deterministic: thread 0 waits on the Q tile's semaphore (one acquire load: the spins
          // are timing-dependent, not modelled), every lane adds with __ldcg / __stcg (no L1), then
          // thread 0 passes the turn (one release store).
          const int64_t sem = ((b * p.heads + h) * m_blocks + i) * 4;
          c.instr(Counter::Read, "dQ semaphores (deterministic)", {{kDqSemaphore, sem}});
          dq_adds(head, m0, nq, d, br, dq.plain, [&](const std::vector<std::vector<Access>>& instrs) {
            for (const auto& lanes : instrs) {
              c.instr(Counter::Read, "dQ read + write (deterministic)", lanes);
              c.instr(Counter::Write, "dQ read + write (deterministic)", lanes);
            }
          });
          c.instr(Counter::Write, "dQ semaphores (deterministic)", {{kDqSemaphore, sem}});
        }
        // store_dkdv: 16-byte stores of dK and dV rows below seqlen_k, one instruction each.
        const int64_t per_row = d / 8, n_chunks = bc * per_row;
        for (int64_t round = 0; round * threads < n_chunks; ++round)
          for (int64_t w = 0; w < threads / 32; ++w) {
            std::vector<Access> dk, dv;
            for (int64_t lane = 0; lane < 32; ++lane) {
              const int64_t ch = round * threads + w * 32 + lane, r = ch / per_row, col = (ch % per_row) * 8;
              if (ch < n_chunks && n0 + r < nkmax) {
                dk.push_back({kDk, ((kv_row0 + n0 + r) * d + col) * e});
                dv.push_back({kDv, ((kv_row0 + n0 + r) * d + col) * e});
              }
            }
            if (!dk.empty()) {
              c.instr(Counter::Write, "dK, dV", dk);
              c.instr(Counter::Write, "dK, dV", dv);
            }
          }
      }
  if (t.dq_whole_tiles)
    dq_tile_convert(c, p, br);
  else
    dq_convert(c, p);
  return c.traffic;
}

Traffic simulate_flash1_fwd(const Problem& p, const ModelTiles& t, const L1Reuse& l1) {
  check(t, "flash1 forward");
  Counter c;
  const int64_t d = p.head_dim, e = bytes_of(p.dtype), nq = p.seqlen_q, nkmax = p.nk();
  const int64_t br = t.block_r, bc = t.block_c, threads = t.warps * 32, rows_per_warp = br / t.warps;
  const int64_t m_blocks = (nq + br - 1) / br, splits = t.splits;
  const auto lens = key_lengths(p);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t z = 0; z < splits; ++z) {  // grid: (head, batch, split)
        const int64_t head = (b * p.heads + h) * nq, hk = h / (p.heads / p.kvh());
        const int64_t kv_row0 = (b * p.kvh() + hk) * nkmax;
        const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax), n_blocks = (nk + bc - 1) / bc;
        // This block's first Q tile at or after `from`, or m_blocks.
        auto own_from = [&](int64_t from) {
          const int64_t i = from + ((z - from % splits) % splits + splits) % splits;
          return std::min(i, m_blocks);
        };
        if (n_blocks == 0) {  // O = 0 element by element, L = −∞ (S > 1: rows of its own Q tiles only)
          auto zero = [&](int64_t row0, int64_t rows) {
            for (int64_t base = 0; base < rows * d; base += threads)
              for (int64_t w = 0; w < threads / 32; ++w) {
                std::vector<Access> lanes;
                for (int64_t lane = 0; lane < 32; ++lane)
                  if (base + w * 32 + lane < rows * d)
                    lanes.push_back({kO, ((head + row0) * d + base + w * 32 + lane) * e});
                if (!lanes.empty()) c.instr(Counter::Write, "O", lanes);
              }
            vector_rows(c, Counter::Write, "L (log-sum-exp)", kLse, head + row0, rows, rows);
          };
          if (splits == 1) {
            zero(0, nq);
          } else {
            for (int64_t i = own_from(0); i < m_blocks; i += splits) zero(i * br, std::min(br, nq - i * br));
          }
          continue;
        }
        // The block's O, ℓ, m visits so far: (Q tile, sectors touched), for what the L1 keeps.
        std::vector<std::pair<int64_t, int64_t>> visited;
        for (int64_t j = 0; j < n_blocks; ++j) {
          const int64_t n0 = j * bc, i_first = p.causal ? std::min(n0 / br, m_blocks) : 0;
          const int64_t first = own_from(i_first);
          if (splits > 1 && first >= m_blocks) continue;  // no Q tile of this block sees K/V tile j
          tile_copy(c, Counter::Read, "K,V tiles", kK, kv_row0, n0, bc, nkmax, d, e, threads, t.smem_layout);
          tile_copy(c, Counter::Read, "K,V tiles", kV, kv_row0, n0, bc, nkmax, d, e, threads, t.smem_layout);
          if (first < m_blocks)
            tile_copy(c, Counter::Read, "Q tiles", kQ, head, first * br, br, nq, d, e, threads, t.smem_layout);
          for (int64_t i = first; i < m_blocks; i += splits) {
            if (i + splits < m_blocks)  // prefetch this block's next Q tile
              tile_copy(c, Counter::Read, "Q tiles", kQ, head, (i + splits) * br, br, nq, d, e, threads, t.smem_layout);
            const int64_t m0 = i * br;
            const int64_t last_j = p.causal ? std::min(n_blocks - 1, (m0 + br - 1) / bc) : n_blocks - 1;
            const bool last = j == last_j;
            Counter reread;                             // this visit's O, ℓ, m loads
            std::set<std::pair<int, int64_t>> touched;  // the O, ℓ, m sectors it reads or writes
            auto rmw = [&](Counter::Op op, const std::string& term, const std::vector<Access>& lanes) {
              for (const auto& a : lanes)
                if (a.buf == kOAcc || a.buf == kRowMax || a.buf == kRowSum) touched.insert({a.buf, a.byte / kSector});
              (op == Counter::Read ? reread : c).instr(op, term, lanes);
            };
            for (int64_t w = 0; w < t.warps; ++w)
              for (int64_t hr = 0; hr < 2; ++hr) {
                // Lanes (g, t): row m0 + warp_row + g + 8·hr, columns nt·8 + 2t of every n8 tile.
                auto rows_of = [&](auto&& lane_access) {
                  std::vector<Access> lanes;
                  for (int64_t g = 0; g < 8; ++g)
                    for (int64_t tq = 0; tq < 4; ++tq) {
                      const int64_t r = m0 + w * rows_per_warp + g + hr * 8;
                      if (r < nq) lane_access(lanes, r, tq);
                    }
                  return lanes;
                };
                auto vec = [&](int buf) {
                  return rows_of([&](std::vector<Access>& l, int64_t r, int64_t) {
                    l.push_back({buf, (head + r) * 4});
                  });
                };
                const auto m_lanes = vec(kRowMax), l_lanes = vec(kRowSum), lse_lanes = vec(kLse);
                if (m_lanes.empty()) continue;
                if (j > 0) {
                  rmw(Counter::Read, "O, l, m re-read", m_lanes);
                  rmw(Counter::Read, "O, l, m re-read", l_lanes);
                }
                for (int64_t nt = 0; nt < d / 8; ++nt) {
                  auto at = [&](int buf, int64_t elem) {
                    return rows_of([&](std::vector<Access>& l, int64_t r, int64_t tq) {
                      l.push_back({buf, ((head + r) * d + nt * 8 + 2 * tq) * elem});
                    });
                  };
                  if (j > 0) rmw(Counter::Read, "O, l, m re-read", at(kOAcc, 4));
                  if (last) {
                    rmw(Counter::Write, "O, L, l, m final write", at(kO, e));
                  } else {
                    rmw(Counter::Write, "O, l, m write-back", at(kOAcc, 4));
                  }
                }
                const std::string term = last ? "O, L, l, m final write" : "O, l, m write-back";
                if (last) rmw(Counter::Write, term, lse_lanes);
                rmw(Counter::Write, term, m_lanes);
                rmw(Counter::Write, term, l_lanes);
              }
            // What the L1 kept: the block's O, ℓ, m sectors since its last visit of tile i, this one's included.
            int64_t window = 0;
            for (auto v = visited.rbegin(); v != visited.rend(); ++v) {
              window += v->second * kSector;
              if (v->first == i) break;
            }
            const int64_t loaded = reread.traffic.read / kSector;
            if (loaded > 0) c.traffic.add("O, l, m re-read", l1_missed_sectors(loaded, window, l1) * kSector, 0);
            visited.push_back({i, int64_t(touched.size())});
          }
        }
      }
  return c.traffic;
}

Traffic simulate_flash1_bwd(const Problem& p, const ModelTiles& t, DqWidth dq) {
  check(t, "flash1 backward");
  Counter c;
  const int64_t d = p.head_dim, e = bytes_of(p.dtype), nq = p.seqlen_q, nkmax = p.nk();
  const int64_t br = t.block_r, bc = t.block_c, threads = t.warps * 32;
  const int64_t m_blocks = (nq + br - 1) / br, n_blocks = (nkmax + bc - 1) / bc;
  const auto lens = key_lengths(p);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t z = 0; z < t.splits; ++z) {  // grid: (head, batch, split)
        const int64_t head = (b * p.heads + h) * nq, hk = h / (p.heads / p.kvh());
        const int64_t kv_row0 = (b * p.kvh() + hk) * nkmax;
        const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
        auto load_q_tile = [&](int64_t i) {
          const int64_t m0 = i * br;
          tile_copy(c, Counter::Read, "Q, dO, O tiles", kQ, head, m0, br, nq, d, e, threads, t.smem_layout);
          tile_copy(c, Counter::Read, "Q, dO, O tiles", kDO, head, m0, br, nq, d, e, threads, t.smem_layout);
          tile_copy(c, Counter::Read, "Q, dO, O tiles", kO, head, m0, br, nq, d, e, threads, t.smem_layout);
          vector_rows(c, Counter::Read, "l, m", kRowSum, head + m0, br, nq - m0);
          vector_rows(c, Counter::Read, "l, m", kRowMax, head + m0, br,
                      nq - m0);  // read where ℓ > 0: every row once nk > 0
        };
        for (int64_t j = z; j < n_blocks; j += t.splits) {  // this block's K/V tiles
          const int64_t n0 = j * bc, i_first = p.causal ? std::min(n0 / br, m_blocks) : 0;
          tile_copy(c, Counter::Read, "K,V tiles", kK, kv_row0, n0, bc, nkmax, d, e, threads, t.smem_layout);
          tile_copy(c, Counter::Read, "K,V tiles", kV, kv_row0, n0, bc, nkmax, d, e, threads, t.smem_layout);
          const bool any = n0 < nk && i_first < m_blocks;
          if (any) load_q_tile(i_first);
          for (int64_t i = any ? i_first : m_blocks; i < m_blocks; ++i) {
            if (i + 1 < m_blocks) load_q_tile(i + 1);
            const int64_t m0 = i * br;
            if (t.splits > 1) {  // blocks of one head share dQ_i: flash2's atomics
              dq_atomics(c, head, m0, nq, d, br, dq.atomic);
              continue;
            }
            // dQ_i += dS·K_j as a plain load and store per lane set (one float2, or x and x + 1 in
            // turn: the second scalar load re-reads the first's sector, an L1 hit).
            dq_adds(head, m0, nq, d, br, dq.plain, [&](const std::vector<std::vector<Access>>& instrs) {
              c.begin_l1_scope();
              for (const auto& lanes : instrs) {
                c.instr(Counter::Read, "dQ read-modify-write", lanes);
                c.instr(Counter::Write, "dQ read-modify-write", lanes);
              }
              c.end_l1_scope();
            });
          }
          tile_copy(c, Counter::Write, "dK, dV", kDk, kv_row0, n0, bc, nkmax, d, e, threads);
          tile_copy(c, Counter::Write, "dK, dV", kDv, kv_row0, n0, bc, nkmax, d, e, threads);
        }
      }
  dq_convert(c, p);
  return c.traffic;
}

Traffic simulate_flash_decode(const Problem& p, const ModelTiles& t, CopyPath copies) {
  using namespace kernels;
  check(t, "flash_decode");
  Counter c;
  const int64_t d = p.head_dim, e = bytes_of(p.dtype), threads = kDecodeWarps * 32, chunks_per_row = d / 8;
  const DecodeSplit split = flash_decode_split(p, 1, 0, t.splits);  // the plan's tiles_per_split for this count
  const int64_t splits = split.splits, row_tiles = split.row_tiles, group = p.heads / p.kvh();
  const int64_t group_rows = group * p.seqlen_q, total_rows = p.batch * p.heads * p.seqlen_q;
  const int64_t page = p.paged() ? p.kv_page : p.nk(), pages_per_seq = p.paged() ? (p.nk() + page - 1) / page : 1;
  const int64_t quads = d / 4;  // the epilogues' and the combine's 4 columns per thread and round
  const auto lens = key_lengths(p);
  std::vector<int64_t> cu(size_t(p.batch) + 1, 0);  // packed varlen decode: K/V [Hkv, T, d], sequence b from row cu[b]
  for (int64_t b = 0; b < p.batch; ++b) cu[size_t(b) + 1] = cu[size_t(b)] + lens[size_t(b)];
  // Lanes of one warp instruction of the 4-columns-per-thread loops over the block's rows: thread
  // ci = base + 32w + lane takes row ci / quads, columns 4·(ci mod quads) …; rows ≥ `rows` skip.
  auto quad_lanes = [&](int64_t base, int64_t w, int64_t rows, auto&& access) {
    std::vector<Access> lanes;
    for (int64_t lane = 0; lane < 32; ++lane) {
      const int64_t ci = base + w * 32 + lane, r = ci / quads, col = ci % quads * 4;
      if (ci < kDecodeBlockM * quads && r < rows) lanes.push_back(access(r, col));
    }
    return lanes;
  };
  // Shared memory: Q (16, d + 8), then the K slices (stages, warps, 16, d + 8), then V's; a slice's
  // row r at r·(d + 8) elements from its 32-byte-aligned start (smem_byte's padded rows).
  for (int64_t b = 0; b < p.batch; ++b)                  // grid.z
    for (int64_t y = 0; y < p.kvh() * row_tiles; ++y) {  // grid.y: K/V head × row tile
      const int64_t hk = y / row_tiles, row0 = y % row_tiles * kDecodeBlockM;
      const int64_t rows = std::min<int64_t>(kDecodeBlockM, group_rows - row0);
      const int64_t grow0 = (b * p.heads + hk * group) * p.seqlen_q + row0;
      const int64_t ticket = (b * p.kvh() * row_tiles + y) * 4;  // splits_done[b, y]
      const int64_t nk = std::min<int64_t>(lens[size_t(b)], p.nk());
      const int64_t key_end = p.causal ? std::min(nk, p.seqlen_q) : nk;
      const int64_t tiles = key_end > 0 ? (key_end + kDecodeBlockN - 1) / kDecodeBlockN : 0;
      // The splits that run: the grid's, or a varlen decode's own (the others return at once).
      const int64_t splits_b = p.packed() ? decode_sequence_splits(int(tiles), split.tiles_per_split) : splits;
      for (int64_t z = 0; z < splits_b; ++z) {  // grid.x: split
        const int64_t first = z * split.tiles_per_split;
        const int64_t count = std::max<int64_t>(0, std::min(tiles, first + split.tiles_per_split) - first);
        // Q: chunk c by thread c % 128 in round c / 128, rows past the group zero-filled.
        tile_copy(c, Counter::Read, "split: Q (once per split)", kQ, grow0, 0, kDecodeBlockM, rows, d, e, threads,
                  t.smem_layout, copies);
        for (int64_t it = 0; it < count; ++it)
          for (int64_t w = 0; w < kDecodeWarps; ++w) {  // load_kv_slice: warp w's 16 keys of the tile
            const int64_t key0 = (first + it) * kDecodeBlockN + w * kDecodeWarpKeys;
            int64_t row = 0;  // the slice's first row in K/V storage
            if (key0 < nk && p.packed_kv()) {
              row = hk * cu.back() + cu[size_t(b)] + key0;
            } else if (key0 < nk) {
              int64_t phys = b, in_page = key0;
              if (p.paged()) {
                const int64_t pg = key0 / page;
                c.instr(Counter::Read, "split: block table (per warp and tile)",
                        std::vector<Access>(32, Access{kBlockTable, (b * pages_per_seq + pg) * 4}));
                phys = b * pages_per_seq + pg;  // any physical page: the sectors are the same
                in_page = key0 - pg * page;
              }
              row = (phys * p.kvh() + hk) * page + in_page;
            }
            for (int64_t c0 = 0; c0 < kDecodeWarpKeys * chunks_per_row; c0 += 32) {
              std::vector<Access> kl, vl;
              for (int64_t lane = 0; lane < 32; ++lane) {
                const int64_t ch = c0 + lane, r = ch / chunks_per_row, col = (ch % chunks_per_row) * 8;
                if (key0 + r >= nk) continue;  // zero-filled
                const int64_t smem = smem_byte(t.smem_layout, r, col, kDecodeWarpKeys, d, e);
                kl.push_back({kK, ((row + r) * d + col) * e, smem, copies});
                vl.push_back({kV, ((row + r) * d + col) * e, smem, copies});
              }
              if (kl.empty()) continue;
              c.instr(Counter::Read, "split: K, V (once per row tile)", kl);
              c.instr(Counter::Read, "split: K, V (once per row tile)", vl);
            }
          }
        // Epilogue: O by 4 columns per thread and round (8-byte stores, or fp32 16-byte ones), L
        // by threads 0 … rows − 1.
        const std::string term = splits_b == 1 ? "split: O, L" : "split: partial O, L (fp32)";
        for (int64_t base = 0; base < kDecodeBlockM * quads; base += threads)
          for (int64_t w = 0; w < kDecodeWarps; ++w) {
            const auto lanes = quad_lanes(base, w, rows, [&](int64_t r, int64_t col) {
              return splits_b == 1 ? Access{kO, ((grow0 + r) * d + col) * e}
                                   : Access{kOPartial, ((z * total_rows + grow0 + r) * d + col) * 4};
            });
            if (!lanes.empty()) c.instr(Counter::Write, term, lanes);
          }
        std::vector<Access> l_lanes;
        for (int64_t r = 0; r < rows; ++r)
          l_lanes.push_back(splits_b == 1 ? Access{kLse, (grow0 + r) * 4}
                                          : Access{kLsePartial, (z * total_rows + grow0 + r) * 4});
        c.instr(Counter::Write, term, l_lanes);
        // Its ticket: thread 0's atomicAdd on the row tile's counter.
        if (splits_b > 1)
          c.instr(Counter::Atom, "split: ticket (atomic; the last split zeroes it)", {{kSplitsDone, ticket}});
      }
      if (splits_b == 1) continue;
      // The last split of the row tile to take a ticket (whichever: the sectors are the same)
      // zeroes the counter and combines: threads 0 … rows − 1 read their row's L_s of every split
      // twice (the maximum, then the weights) and write L; then O = Σ_s w_s·O_s by 4 columns per
      // thread and round — a 16-byte read of each split's partial, an 8-byte store of O. The
      // partials are read past L1 (__ldcg): every instruction reaches L2.
      c.instr(Counter::Write, "split: ticket (atomic; the last split zeroes it)", {{kSplitsDone, ticket}});
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t s = 0; s < splits_b; ++s) {
          std::vector<Access> lanes;
          for (int64_t r = 0; r < rows; ++r) lanes.push_back({kLsePartial, (s * total_rows + grow0 + r) * 4});
          c.instr(Counter::Read, "combine: partial O, L (fp32)", lanes);
        }
      std::vector<Access> l_lanes;
      for (int64_t r = 0; r < rows; ++r) l_lanes.push_back({kLse, (grow0 + r) * 4});
      c.instr(Counter::Write, "combine: O, L", l_lanes);
      for (int64_t base = 0; base < kDecodeBlockM * quads; base += threads)
        for (int64_t w = 0; w < kDecodeWarps; ++w) {
          for (int64_t s = 0; s < splits_b; ++s) {
            const auto lanes = quad_lanes(base, w, rows, [&](int64_t r, int64_t col) {
              return Access{kOPartial, ((s * total_rows + grow0 + r) * d + col) * 4};
            });
            if (!lanes.empty()) c.instr(Counter::Read, "combine: partial O, L (fp32)", lanes);
          }
          const auto lanes = quad_lanes(base, w, rows, [&](int64_t r, int64_t col) {
            return Access{kO, ((grow0 + r) * d + col) * e};
          });
          if (!lanes.empty()) c.instr(Counter::Write, "combine: O, L", lanes);
        }
    }
  return c.traffic;
}

Traffic simulate_sm_l2(const ModelPoint& m) { return model_of(m).simulate_sm_l2(m); }

}  // namespace flashio::analysis
