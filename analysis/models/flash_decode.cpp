// flash_decode (kernels/flash_decode/): split-KV decoding, the exact SM↔L2 model of its kernel
// (flash_decode_kernel.cuh), checked against analysis/schedule_sim.cpp (simulate_flash_decode),
// and its trace for the L2 simulation. The tile, the stages and the shared memory are the
// kernel's (kernels/flash_decode/flash_decode_configs.h: 16 rows × 64 keys, four warps of 16
// keys); the split count is the record's (tiles.splits), dealt into K/V tiles as the plan deals it
// (flash_decode_split with that count forced).
//
// One block per (split, K/V head × row tile, batch): the 16-row tile of the GQA group's G·Nq rows
// (rows past the group zero-filled, not read) — Q read once per split and row tile; each warp
// copies its 16 keys of each of the split's 64-key tiles of K and V (keys past the sequence's
// length zero-filled, not read), so K and V are read once per row tile, the splits reading
// disjoint ranges; paged K/V: the block table read by every warp once per tile (one 4-byte load of
// all 32 lanes: one sector). The copies go through L1 (cp.async.ca, kCopies): each global sector
// crosses to the SM once whatever the shared rows' layout (smem_row_deliveries). Epilogue: one
// split, O (8-byte stores of whole rows) and L (the block's rows in one instruction); more, the
// split's fp32 O (16-byte stores) and L, [splits, B·H·Nq, (d)], then a ticket (one atomicAdd on the
// row tile's counter: a sector each). The last split of the row tile to take one zeroes the
// counter (a sector) and combines: threads 0 … rows − 1 read their row's L_s of every split twice
// past L1 (one instruction of `rows` consecutive floats per split and pass) and write L; every
// split's partial O rows are read once (16-byte __ldcg loads, whole sectors) and O written once
// (8-byte stores of 4 columns, whole sectors).
//
// Packed varlen decode (Problem::key_varlen, K/V [Hkv, T, d]): sequence b's K/V rows start at
// cu[b] of each K/V head (the bytes per row are the same: a row is whole sectors); it has its own
// split count, decode_sequence_splits(tiles_b, tiles_per_split), and the grid's blocks past it
// return before any access: no Q, no partials, no ticket; one split writes O and L itself, and the
// combine reads only its splits' partials. Paged (Problem::paged_varlen): the same blocks, rows and
// splits, each K/V slice in a page of the sequence's own (a page holds whole tiles, and a row is
// whole sectors wherever it lies: the same bytes as packed), and the block table read as dense
// paged reads it, once per warp and tile of the sequence's keys. The L2 simulation lays the
// paged K/V out as the packed K/V (the same rows; which physical page holds them does not change
// a count).
//
// DRAM: compulsory Q, K, V read and O, L written (paged: the block table's entries read, the
// sequence's own pages' only when varlen); the partials and
// the counters are workspace, in the L2 simulation's trace like any buffer: the partials written at
// the end of each split block and read by the row tile's last one, they stay in L2 (and are never
// written back) wherever they fit — every committed point: at most splits·B·H·Nq·(d + 1)·4 = 0.5 MB.
#include <fmt/format.h>

#include "analysis/models/model.h"
#include "analysis/models/model_parts.h"
#include "analysis/schedule_sim.h"
#include "kernels/flash_decode/flash_decode_configs.h"

namespace flashio::analysis {

namespace {

using namespace parts;
using kernels::kDecodeBlockM, kernels::kDecodeBlockN, kernels::kDecodeWarps, kernels::kDecodeWarpKeys;

// The kernel's Q, K and V copies: cp_async_16_l1 (cp.async.ca, through L1; flash_decode_kernel.cuh).
constexpr CopyPath kCopies = CopyPath::ThroughL1;
constexpr char kTicketTerm[] = "split: ticket (atomic; the last split zeroes it)";

// The point's schedule: the kernel's tile, the record's splits as the plan deals them.
struct Schedule {
  Problem p;
  kernels::DecodeSplit split;
  int64_t group_rows = 0;  // G·Nq: the rows of one K/V head's group (the kernel's row tiles cut these)
  int64_t total_rows = 0;  // B·H·Nq
  int64_t e = 2;
  SmemLayout layout = SmemLayout::Padded;
  std::vector<int32_t> lens;

  int64_t groups() const { return p.batch * p.kvh(); }
  int64_t nk(int64_t b) const { return std::min<int64_t>(lens[size_t(b)], p.nk()); }
  // K/V tiles batch b's rows see (the kernel's kv_tile_count; causal: keys up to Nq).
  int64_t tiles(int64_t b) const {
    const int64_t end = p.causal ? std::min(nk(b), p.seqlen_q) : nk(b);
    return end > 0 ? ceil_div(end, kDecodeBlockN) : 0;
  }
  int64_t first_tile(int64_t split_index) const { return split_index * split.tiles_per_split; }
  int64_t tile_count(int64_t b, int64_t split_index) const {
    const int64_t first = first_tile(split_index);
    return std::max<int64_t>(0, std::min(tiles(b), first + split.tiles_per_split) - first);
  }
  int64_t rows(int64_t row_tile) const {
    return std::min<int64_t>(kDecodeBlockM, group_rows - row_tile * kDecodeBlockM);
  }
  int64_t pages_per_seq() const { return p.paged() ? ceil_div(p.nk(), p.kv_page) : 0; }
  // Block-table entries the kernel reads: every sequence's pages_per_seq, or a paged varlen
  // decode's ⌈L_b/P⌉ each (KvPages::used).
  int64_t table_entries() const {
    if (!p.paged_varlen()) return p.batch * pages_per_seq();
    int64_t n = 0;
    for (int32_t len : lens) n += ceil_div(len, p.kv_page);
    return n;
  }
  // Splits that run for batch b: the grid's, or a packed varlen decode's own (its other blocks return).
  int64_t splits_of(int64_t b) const {
    return p.packed() ? kernels::decode_sequence_splits(int(tiles(b)), split.tiles_per_split) : split.splits;
  }
};

Schedule schedule_of(const ModelPoint& m) {
  require(m.pass == Pass::Fwd, "flash_decode has a forward kernel only");
  const ModelTiles t = need_tiles(m.fwd_tiles, m, "forward");
  require(t.block_r == kDecodeBlockM && t.block_c == kDecodeBlockN && t.warps == kDecodeWarps,
          fmt::format("flash_decode: the record's tiles ({}×{}, {} warps) are not the kernel's ({}×{}, {} warps: "
                      "kernels/flash_decode/flash_decode_configs.h)",
                      t.block_r, t.block_c, t.warps, kDecodeBlockM, kDecodeBlockN, kDecodeWarps));
  require(t.splits >= 1, "flash_decode: the record's tiles.splits must be at least 1");
  require(!m.problem.packed_q(), "flash_decode runs no self-attention variable-length problem (only a varlen decode)");
  Schedule s;
  s.p = m.problem;
  s.split = kernels::flash_decode_split(m.problem, 1, 0, t.splits);
  require(s.split.splits == t.splits,
          fmt::format("flash_decode: {} splits of {} K/V tiles leave a split empty: not a count the plan runs "
                      "({} splits of {} tiles)",
                      t.splits, s.split.tiles, s.split.splits, s.split.tiles_per_split));
  s.group_rows = m.problem.heads / m.problem.kvh() * m.problem.seqlen_q;
  s.total_rows = m.problem.batch * m.problem.heads * m.problem.seqlen_q;
  s.e = bytes_of(m.problem.dtype);
  s.layout = t.smem_layout;
  s.lens = key_lengths(m.problem);
  return s;
}

// Crossbar deliveries (rows) of the K (or V) slices of tiles [t0, t1) of a sequence of nk keys:
// warp w of tile t copies keys t·64 + 16w … of which those below nk are requested.
int64_t slice_rows(const Schedule& s, int64_t nk, int64_t t0, int64_t t1) {
  const int64_t full_end = nk / kDecodeBlockN;  // tiles whose every key exists
  int64_t rows = std::max<int64_t>(0, std::min(t1, full_end) - t0) * kDecodeWarps *
                 smem_row_deliveries(kDecodeWarpKeys, s.layout, kCopies);
  for (int64_t t = std::max(t0, full_end); t < t1; ++t)
    for (int64_t w = 0; w < kDecodeWarps; ++w)
      rows += smem_row_deliveries(std::clamp<int64_t>(nk - t * kDecodeBlockN - w * kDecodeWarpKeys, 0, kDecodeWarpKeys),
                                  s.layout, kCopies);
  return rows;
}

// Block-table loads (a sector each) of tiles [t0, t1): one per warp whose first key exists.
int64_t table_loads(int64_t nk, int64_t t0, int64_t t1) {
  const int64_t full_end = nk / kDecodeBlockN;
  int64_t n = std::max<int64_t>(0, std::min(t1, full_end) - t0) * kDecodeWarps;
  for (int64_t t = std::max(t0, full_end); t < t1; ++t)
    n += std::clamp<int64_t>(ceil_div(nk - t * kDecodeBlockN, kDecodeWarpKeys), 0, kDecodeWarps);
  return n;
}

Traffic decode_traffic(const Schedule& s) {
  const Problem& p = s.p;
  const int64_t d = p.head_dim, row_bytes = d * s.e, tr = s.total_rows;
  Traffic out;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t hk = 0; hk < p.kvh(); ++hk) {
      const int64_t group = b * p.kvh() + hk, nk = s.nk(b), tiles = s.tiles(b), splits = s.splits_of(b);
      for (int64_t rt = 0; rt < s.split.row_tiles; ++rt) {
        const int64_t rows = s.rows(rt), grow0 = group * s.group_rows + rt * kDecodeBlockM;
        out.add("split: Q (once per split)", splits * smem_row_deliveries(rows, s.layout, kCopies) * row_bytes, 0);
        // The splits' tile ranges cover the sequence's tiles once.
        out.add("split: K, V (once per row tile)", 2 * slice_rows(s, nk, 0, tiles) * row_bytes, 0);
        if (p.paged()) out.add("split: block table (per warp and tile)", table_loads(nk, 0, tiles) * kSector, 0);
        if (splits == 1) {
          out.add("split: O, L", 0, rows * row_bytes + grouped_fp32_sectors(grow0, rows, kDecodeBlockM) * kSector);
          continue;
        }
        int64_t l_sectors = 0;  // each split's L of these rows: one instruction of `rows` floats
        for (int64_t z = 0; z < splits; ++z) {
          l_sectors += grouped_fp32_sectors(z * tr + grow0, rows, kDecodeBlockM);
          out.add("split: partial O, L (fp32)", 0,
                  rows * d * kF32 + grouped_fp32_sectors(z * tr + grow0, rows, kDecodeBlockM) * kSector);
        }
        out.add(kTicketTerm, 0, kSector, 0, splits * kSector);  // a ticket per split; the last zeroes it
        // The last split: every split's L twice, its O rows once; O and L written once.
        out.add("combine: partial O, L (fp32)", splits * rows * d * kF32 + 2 * l_sectors * kSector, 0);
        out.add("combine: O, L", 0, rows * row_bytes + grouped_fp32_sectors(grow0, rows, kDecodeBlockM) * kSector);
      }
    }
  return out;
}

class FlashDecodeModel final : public IoModel {
 public:
  std::string method() const override { return "flash_decode"; }
  bool exact() const override { return true; }
  Traffic sm_l2(const ModelPoint& m) const override { return decode_traffic(schedule_of(m)); }
  Traffic simulate_sm_l2(const ModelPoint& m) const override {
    require(m.pass == Pass::Fwd, "flash_decode has a forward kernel only");
    return simulate_flash_decode(m.problem, m.fwd_tiles.value(), kCopies);
  }
  Traffic compulsory_dram(const ModelPoint& m) const override {
    const Schedule s = schedule_of(m);
    Traffic out;
    add_forward_compulsory(m.problem, out);
    if (m.problem.paged()) out.add("block table", s.table_entries() * 4, 0);
    return out;
  }
  // The wave model (--dram-waves): every byte once (K and V are read once per row tile, the row
  // tiles of a group launched together).
  int64_t dram_beyond_compulsory(const ModelPoint&, const DramContext&, DramPrediction& out) const override {
    out.note = "compulsory bytes: every key is read once per row tile, the partials stay in L2";
    return 0;
  }
  std::optional<SimTrace> dram_trace(const ModelPoint& m, const DramContext& c, int coarse) const override;
  double asymptotic_form(const ModelPoint& m) const override {
    const Problem& p = m.problem;  // K, V of every K/V head, Q and O of every query head: Θ(Hkv·Nk·d + H·Nq·d)
    const double keys = p.packed() ? double(p.total_tokens()) : double(p.batch) * double(p.nk());  // packed: Σ L_b
    return (double(p.kvh()) * keys + double(p.batch) * double(p.heads) * double(p.seqlen_q)) * double(p.head_dim);
  }
  std::string asymptotic_formula(const ModelPoint& m) const override {
    return m.problem.packed() ? "Hkv·ΣL_b·d + H·Nq·d  (each byte once; varlen keys, packed or paged)"
                              : "Hkv·Nk·d + H·Nq·d  (each byte once)";
  }
  bool predictable() const override { return false; }  // its split count follows the run's GPU and batch
  PredictedTiles predict_tiles(const Problem&, int64_t) const override {
    throw std::invalid_argument(
        "flash_decode: `flashio predict` has no split count (the kernel's tiles.splits follows batch, heads and "
        "SMs): analyse a record instead");
  }
};

// The L2 simulation's trace: the kernel's blocks (split, K/V head × row tile, batch) with split
// fastest; step 0 reads the block's Q rows, each step the next K/V tile of its range (and, paged,
// the block-table entry), the last writes O, L or the split's partial O, L and takes its ticket (a
// reduction on the row tile's counter). With splits > 1 the row tile's blocks are a join group
// (SimKernel::join): the one that ends its steps last in the simulated schedule — not the last
// in launch order: the last split often has fewer tiles, and a row tile's splits may straddle a
// wave — runs one step more, the combine: it zeroes the counter, reads every split's partial L
// and O of the row tile and writes O, L. One K/V tile is one time unit. Buffers per K/V head's
// group (its G·Nq rows); resident blocks from the kernel's shared memory (flash_decode_configs.h).
std::optional<SimTrace> FlashDecodeModel::dram_trace(const ModelPoint& m, const DramContext& c, int coarse) const {
  const auto s = std::make_shared<const Schedule>(schedule_of(m));
  const Problem& p = s->p;
  const int64_t d = p.head_dim, e = s->e, groups = s->groups(), splits = s->split.splits, k = coarse;
  const int64_t row_tiles = s->split.row_tiles, kv_chunk = kDecodeBlockN * coarse;
  // Where group (b, hk)'s keys are: head b·Hkv + hk from row 0, or packed, head hk from row cu[b].
  auto first = std::make_shared<std::vector<int64_t>>(size_t(p.batch), 0);
  for (int64_t b = 1; p.packed() && b < p.batch; ++b)
    (*first)[size_t(b)] = (*first)[size_t(b - 1)] + s->lens[size_t(b - 1)];
  enum : int32_t { kQ, kK, kV, kO, kL, kOPart, kLPart, kTable, kTickets };
  SimTrace tr;
  tr.buffers = {{"Q", groups, s->group_rows, d * e, kDecodeBlockM},
                {"K", groups, p.nk(), d * e, kv_chunk},
                {"V", groups, p.nk(), d * e, kv_chunk},
                {"O", groups, s->group_rows, d * e, kDecodeBlockM},
                {"L", groups, s->group_rows, 4, kDecodeBlockM},
                {"partial O (fp32)", splits > 1 ? splits * groups : 0, s->group_rows, d * kF32, kDecodeBlockM},
                {"partial L (fp32)", splits > 1 ? splits * groups : 0, s->group_rows, 4, kDecodeBlockM},
                {"block table", p.batch, s->pages_per_seq(), 4, kSector / 4},
                {"split tickets (int)", splits > 1 ? 1 : 0, groups * row_tiles, 4, kSector / 4}};
  if (p.packed()) {  // one head of T rows per K/V head, a segment per sequence: no padding (paged: the same rows)
    const std::vector<int64_t> seqs(s->lens.begin(), s->lens.end());
    tr.buffers[kK] = segmented_buffer("K", p.kvh(), seqs, d * e, kv_chunk);
    tr.buffers[kV] = segmented_buffer("V", p.kvh(), seqs, d * e, kv_chunk);
  }
  const auto bufs = std::make_shared<const std::vector<SimBuffer>>(tr.buffers);

  struct Where {
    int64_t split, b, group, rt, first, count, steps, splits, kv_head, kv_row0;
  };
  auto where = [=](int64_t blk) {
    Where w{};
    w.split = blk % splits;
    const int64_t y = blk / splits % (p.kvh() * row_tiles);
    w.b = blk / splits / (p.kvh() * row_tiles);
    w.group = w.b * p.kvh() + y / row_tiles, w.rt = y % row_tiles;
    w.first = s->first_tile(w.split), w.count = s->tile_count(w.b, w.split);
    w.steps = std::max<int64_t>(1, ceil_div(w.count, k));
    w.splits = s->splits_of(w.b);  // w.split ≥ w.splits: the block returns at once (one empty step)
    w.kv_head = p.packed() ? y / row_tiles : w.group;
    w.kv_row0 = (*first)[size_t(w.b)];
    return w;
  };
  SimKernel ks;
  ks.name = "forward";
  ks.blocks = splits * p.kvh() * row_tiles * p.batch;
  ks.blocks_per_sm = resident_blocks(kDecodeWarps * 32, kernels::flash_decode_smem_bytes(int(d)), c.gpu, c.kernels.fwd);
  ks.steps = [=](int64_t blk) { return where(blk).steps; };
  if (splits > 1)  // the row tile's running splits (its ticket counter)
    ks.join = [=](int64_t blk) {
      const Where w = where(blk);
      return w.splits > 1 && w.split < w.splits ? blk / splits : int64_t(-1);
    };
  ks.step = [=](int64_t blk, int64_t step, std::vector<SimAccess>& out) {
    const Where w = where(blk);
    const int64_t r0 = w.rt * kDecodeBlockM, r1 = r0 + s->rows(w.rt), nk = s->nk(w.b), ticket = blk / splits;
    if (step == w.steps) {  // the combine, by the row tile's last block to finish
      push_rows(out, *bufs, kTickets, 0, ticket, ticket + 1, SimOp::Write);
      for (int32_t buf : {kLPart, kOPart})
        for (int64_t z = 0; z < w.splits; ++z) push_rows(out, *bufs, buf, z * groups + w.group, r0, r1, SimOp::Read);
      push_rows(out, *bufs, kL, w.group, r0, r1, SimOp::Write);
      push_rows(out, *bufs, kO, w.group, r0, r1, SimOp::Write);
      return;
    }
    if (w.split >= w.splits) return;
    if (step == 0) push_rows(out, *bufs, kQ, w.group, r0, r1, SimOp::Read);
    for (int64_t q = step * k; q < std::min(w.count, (step + 1) * k); ++q) {
      const int64_t t = w.first + q, key0 = t * kDecodeBlockN;
      for (int32_t buf : {kK, kV})
        push_rows(out, *bufs, buf, w.kv_head, w.kv_row0 + key0, w.kv_row0 + std::min(nk, key0 + kDecodeBlockN),
                  SimOp::Read);
      if (p.paged() && key0 < nk)
        push_rows(out, *bufs, kTable, w.b, key0 / p.kv_page, key0 / p.kv_page + 1, SimOp::Read);
    }
    if (step < w.steps - 1) return;
    if (w.splits == 1) {
      push_rows(out, *bufs, kO, w.group, r0, r1, SimOp::Write);
      push_rows(out, *bufs, kL, w.group, r0, r1, SimOp::Write);
    } else {
      push_rows(out, *bufs, kOPart, w.split * groups + w.group, r0, r1, SimOp::Write);
      push_rows(out, *bufs, kLPart, w.split * groups + w.group, r0, r1, SimOp::Write);
      push_rows(out, *bufs, kTickets, 0, ticket, ticket + 1, SimOp::Red);
    }
  };
  tr.kernels.push_back(std::move(ks));
  return tr;
}

}  // namespace

void register_flash_decode_model(ModelRegistry& r) { r.add(std::make_unique<FlashDecodeModel>()); }

}  // namespace flashio::analysis
