// The IO model: bytes each method's schedule moves between the SMs and L2 (the level the
// tile argument of FlashAttention's Theorem 2 / Theorem 5 / Proposition 4 speaks of), the
// compulsory DRAM bytes, and the asymptotic forms with a fitted constant.
//
// Unit: bytes of the 32-byte sectors the kernel's warp instructions touch, as the counters
// count them (l1tex__m_xbar2l1tex_read_bytes, lts__t_sectors_srcunit_tex_op_write × 32,
// lts__t_sectors_op_red × 32, lts__t_sectors_op_atom × 32). Tile rows are whole sectors (d·e is a
// multiple of 32 for every compiled head dim); the fp32 row vectors (L, D, ℓ, m) and the fp32
// accumulators are counted at the sector granularity of the instructions that touch them (e.g.
// the flash2 backward's scalar dQ atomics of sm_80 touch one sector per row per instruction with
// 16 of its 32 bytes: 2× the data; DqWidth).
//
// Each method's model lives in analysis/models/<method>.cpp, registered under the method's name
// (analysis/models/model.h); the functions below dispatch to it by ModelPoint::method.
//
// Exactness: `predict_sm_l2` is a closed form per (batch, head) — sums over tiles only where a
// causal mask or a block mask makes tiles differ — and tests/test_analysis.cpp checks it
// equals analysis/schedule_sim.h, which walks each kernel's own loops instruction by
// instruction. Tile sizes come from the record (`tiles`, `tiles_bwd`), never from the
// kernels' constants. Assumptions the GPU measurement checks (DESIGN.md "What the counters
// see"): a zero-filling cp.async (row past the end) requests no bytes; a load that re-reads
// the sector the same thread block's previous instruction just read hits L1 (flash1's dQ
// read-modify-write, the dQ convert kernel's two float4 loads). The dQ accumulator's
// cudaMemsetAsync is not counted: it is no kernel of the counters' per-kernel ranges (measured).
//
// Standard attention (cuBLAS GEMMs + elementwise kernels) is modelled by its compulsory matrix
// traffic only: every kernel reads its operands and writes its result once. cuBLAS's own
// re-reads of operand tiles are not modelled, so its verdicts are informational. Its two
// variants differ in their elementwise passes (Elementwise below).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/l1_reuse.h"
#include "bench/core/method.h"
#include "bench/core/problem.h"
#include "bench/core/tile_shape.h"

namespace flashio::analysis {

// Bytes at one level, split by operation; `terms` name where they come from. `red`: reductions
// (atomics whose result is not returned: red.global); `atom`: atomics that return the old value
// (atom.global, e.g. a ticket's atomicAdd), which l2_atom counts.
struct Term {
  std::string name;  // "K,V tiles", "dQ accumulate (atomic)", ...
  int64_t read = 0, write = 0, red = 0, atom = 0;
};
struct Traffic {
  int64_t read = 0, write = 0, red = 0, atom = 0;
  std::vector<Term> terms;
  int64_t total() const { return read + write + red + atom; }
  void add(const std::string& name, int64_t r, int64_t w, int64_t red_bytes = 0, int64_t atom_bytes = 0);
  Traffic& operator+=(const Traffic& o);
  nlohmann::json to_json() const;
};

// A block mask over (Q tile i, K tile j), row-major, Tr × Tc at the kernel's own tile size:
// false = the tile pair is skipped (block-sparse FlashAttention, Proposition 4). Empty = dense.
struct BlockMask {
  int64_t rows = 0, cols = 0;
  std::vector<bool> keep;
  bool empty() const { return keep.empty(); }
  bool at(int64_t i, int64_t j) const { return keep.empty() || keep[size_t(i * cols + j)]; }
  double density() const;
};

// One kernel's tile configuration, as recorded. `splits` (records' `tiles.splits`, absent = 1):
// flash1's thread blocks per (batch, head) — grid (heads, batch, S); forward block z takes the Q
// tiles i ≡ z (mod S), backward block z the K/V tiles j ≡ z (mod S).
//
// `smem_layout` (records' `tiles.smem_layout`, absent = padded): how the kernel's shared tiles
// lay out the rows its tile loads (cp.async or TMA) land in — the one thing the SM↔L2 bytes of
// a tile load depend on beyond the rows themselves (smem_row_deliveries). Padded rows of
// (d + 8) elements put every odd row 16 bytes into a 32-byte shared-memory sector: each of its
// global sectors crosses the crossbar twice (1.5× on full tiles, measured on the H100); the
// 128-byte swizzle permutes 16-byte chunks inside 128-byte rows and keeps the two halves of a
// 32-byte global sector in one shared sector: 1.0× (PyTorch's swizzled kernels, DESIGN.md).
enum class SmemLayout { Padded, Swizzle128 };
const char* to_string(SmemLayout l);

// How a tile load's 16-byte copies reach shared memory (kernels/common/mma.cuh), the other thing
// its SM↔L2 bytes depend on. `BypassL1`: cp.async.cg (cp_async_16; TMA likewise) — L2 delivers
// each global sector to each 32-byte shared-memory sector it lands in, so the layout's factor
// applies (smem_row_deliveries). `ThroughL1`: cp.async.ca (cp_async_16_l1) — each global sector
// comes to L1 once per instruction, which fills the shared sectors from there: the bytes copied,
// whatever the layout. Measured on the H100 (Nsight Compute, flash_decode, b 32, GQA 32:8, d 128,
// 32k keys, padded rows): l1tex__m_xbar2l1tex_read_bytes 4.30 GB through L1 = the K and V bytes
// (134.23M sectors, 4 per L2 request), 6.44 GB (1.5×) with the same copies past L1. Repeats across
// instructions are not assumed to hit L1 (the kernels that copy through L1 copy every sector once).
enum class CopyPath { BypassL1, ThroughL1 };
// "padded", "swizzle128"; empty (older records) = padded; anything else: nullopt.
std::optional<SmemLayout> parse_smem_layout(const std::string& s);

// The IO model's view of a kernel's tiles: the shape (TileShape, bench/core/tile_shape.h) as
// recorded, and what the model needs beside it. `splits`: thread blocks sharing one (batch, head)
// (flash1). Rows of fp32 values the kernels' row-vector instructions cover (flash2's schedule): the
// forward epilogue stores L from one lane per row, `l_store_rows` consecutive rows per warp
// instruction (the t == 0 lanes of an m16n8 — or wgmma m64 — accumulator: 8); the backward
// reads L and D one row per thread, `vector_load_rows` consecutive rows per warp instruction
// (32), from the tile start. Parameters, not constants, so that a kernel that stores or loads
// them otherwise says so in one place.
//
// `dq_whole_tiles` (a backward's records' `tiles_bwd.dq_adds` "tiles"): each visit adds its whole
// Br-row dQ tile, rows past Nq too, with bulk reductions into an accumulator of ⌈Nq/Br⌉·Br rows
// per head, and the conversion reads back the tiles' row pairs that hold a row below Nq (flash3,
// kernels/flash3/flash3_dq_layout.h); otherwise the lanes' atomics of DqWidth.
struct ModelTiles : TileShape {
  int splits = 1;
  SmemLayout smem_layout = SmemLayout::Padded;
  int l_store_rows = 8;
  int vector_load_rows = 32;
  bool dq_whole_tiles = false;
};

// How a backward kernel adds into the fp32 dQ accumulator: floats per lane and instruction.
// bwd_tile_step hands its lambda two adjacent columns (2t, 2t + 1) of a row, 8-byte aligned
// (kernels/flash2/flash2_bwd_kernel.cuh, since 9077f49): `atomic` = 2 is one
// `red.global.add.v2.f32` (atomic_add2 compiled for sm_90 and later), 1 two scalar atomics
// (before sm_90); `plain` = 2 is one 8-byte load and store (flash1's read-modify-write, the
// deterministic mode's ld/st.global.cg) on every arch. The kernels before 9077f49 added every
// float alone: {1, 1}.
struct DqWidth {
  int atomic = 2, plain = 2;
};
// The width the kernel built for `sm_arch` (e.g. 90) uses; `scalar_kernel`: the pre-9077f49 kernels.
DqWidth dq_width(int sm_arch, bool scalar_kernel = false);

// The materialized methods' elementwise steps between the GEMMs (records' tiles.elementwise):
//   Separate  `standard`: masking (in place over S, where a mask applies), softmax, dropout
//             (P → P_drop and a one-byte-per-element mask); backward: dropout backward from the
//             stored mask, softmax backward — each its own pass over HBM.
//   Fused     `standard_fused`: mask + softmax + dropout in one pass (P and P_drop written), the
//             dropout redrawn inside the softmax backward. Also every `standard` record without
//             tiles.elementwise: the files written before the split hold the fused code's records
//             (analysis/models/standard.cpp reads a record's variant).
enum class Elementwise { Separate, Fused };

// Where a peer's FA-2 kernels (analysis/models/peers.cpp) move bytes flash2's own kernels do not,
// or do not move bytes they do; read from the peer's launches. flash2 and the methods on its
// schedule leave it at its defaults.
struct Fa2Variant {
  bool forward_lse_without_backward = true;  // false: a forward with no backward after it writes no L
  bool q_read_per_kv_tile = false;           // Q_i read again for every K/V tile (cutlass's forward)
  bool preprocess_zeroes_dq = false;         // the backward's preprocess kernel zeroes the fp32 dQ accumulator
};

// Everything the exact model needs about one point.
struct ModelPoint {
  // The method whose registered model (analysis/models/model.h) reads the point: flash1, flash2,
  // blocksparse_flash, flash3, flash_decode, standard, standard_fused, the peers (peers.cpp).
  std::string method;
  Elementwise elementwise = Elementwise::Separate;  // standard only (standard_fused: always Fused)
  Pass pass = Pass::Fwd;
  Problem problem;
  std::optional<ModelTiles> fwd_tiles, bwd_tiles;
  BlockMask mask;                 // at the forward kernel's tile size (flash2's schedule, blocksparse_flash)
  BlockMask bwd_mask;             // at the backward kernel's tile size
  int sm_arch = 90;               // the architecture the kernels were compiled as (__CUDA_ARCH__ / 10)
  bool dq_scalar_kernel = false;  // produced by the kernels before 9077f49 (scalar dQ adds)
  Fa2Variant fa2;                 // a peer's kernels (peers.cpp); flash2's own: the defaults
  L1Reuse fwd_l1;                 // the L1 the forward kernel's blocks share (l1_reuse.h; flash1 reads it)
  DqWidth dq() const { return dq_width(sm_arch, dq_scalar_kernel); }
};

// Whether the method's registered model is an exact schedule model (the fused kernels: flash1,
// flash2, blocksparse_flash), judged at SM↔L2 and DRAM.
bool has_exact_model(const std::string& method);

// SM↔L2 bytes of the whole pass (fwdbwd = fwd + bwd). Throws std::invalid_argument with a
// sentence when the point lacks what the model needs (e.g. a backward pass without tiles).
Traffic predict_sm_l2(const ModelPoint& m);

// The kernels of one pass, each with its own traffic (the closed forms, per kernel; defined in
// analysis/models/flash2.cpp, flash1.cpp, standard.cpp).
// How a forward kernel loads the last K/V tile of a sequence: flash2's copies read only the rows
// below the batch's key length (zero-filling the rest); flash3's TMA boxes move every row of the
// box, a batch's padded keys (masked by the kernel) and the rows past the tensor's end (zero-filled
// by TMA, yet counted by l1tex__m_xbar2l1tex_read_bytes: flash3 at Bc 80, whose last tile runs
// past Nk at every N of the FA-2 setting, measured 1.0000 of whole boxes on the H100, 1.002-1.08
// of boxes cut at Nk).
enum class KvTileLoads { CutAtKeyLength, WholeTiles };
Traffic flash2_fwd_traffic(const Problem& p, const ModelTiles& t, const BlockMask& mask,
                           KvTileLoads loads = KvTileLoads::CutAtKeyLength);
Traffic flash2_bwd_traffic(const Problem& p, const ModelTiles& t, const BlockMask& mask, DqWidth dq = {});
// flash1's forward with `l1`: its O, ℓ, m re-reads that the L1 serves are not counted (l1_reuse.h).
Traffic flash1_fwd_traffic(const Problem& p, const ModelTiles& t, const L1Reuse& l1 = {});
Traffic flash1_bwd_traffic(const Problem& p, const ModelTiles& t, DqWidth dq = {});
Traffic standard_fwd_traffic(const Problem& p, Elementwise k);
Traffic standard_bwd_traffic(const Problem& p, Elementwise k);

// Compulsory DRAM bytes: every input read once, every output (and every workspace buffer
// that must be written back) written once (the method's model says which those are).
Traffic compulsory_dram(const ModelPoint& m);

// The fp32 dQ adds (flash2's backward: atomics, or ld/st.cg when deterministic; flash1's: a
// read-modify-write, atomics with splits > 1), in one place. bwd_tile_step hands dQ_i += dS·K_j
// to its lambda per (query row, n8 column tile, row half): lane (g, t) adds columns 2t, 2t + 1.
// One warp instruction covers 8 rows × 4 lanes × `floats_per_lane` floats at an 8-byte stride:
// one sector per row, 16 of its 32 bytes for scalars (2 instructions per row and 8 columns),
// all 32 for float2 (1). The scalar count was read from the sm_90 SASS of the pre-9077f49
// flash2_bwd_kernel (CUDA 13.0, d = 128): 64 = (d/32)·4·2·2 `REDG.E.ADD.F32.FTZ.RN.STRONG.GPU`
// per thread and iteration at +0 / +4 and +0x1000 (8 rows down), none split, none merged.
// 32-byte sectors one such add sends to L2 per query row of one (i, j) visit.
int64_t dq_sectors_per_row(int64_t head_dim, int floats_per_lane);

// Deliveries across the SM's crossbar, in whole-row units, of a tile load of `rows` valid rows
// into shared memory of layout `l` by copies taking `path` (l1tex__m_xbar2l1tex_read_bytes counts
// them): past L1, padded, every odd row twice (rows + ⌊rows/2⌋), swizzle128, every row once;
// through L1, every row once in either layout. The one place the factor lives
// (analysis/schedule_sim.cpp computes the shared addresses themselves and must agree).
int64_t smem_row_deliveries(int64_t rows, SmemLayout l, CopyPath path = CopyPath::BypassL1);

// Sectors (32 bytes) of `n` consecutive fp32 values starting at element `first`, touched by
// instructions that each cover `group` consecutive values (group-aligned from `first`).
int64_t grouped_fp32_sectors(int64_t first, int64_t n, int64_t group);

// --- asymptotic forms: Theorem 2 (flash1 fwd Θ(N²d²/M)), FA-2 (Θ(N²d/Br)), Theorem 5
// (backward), Proposition 4 (× block density s), standard Θ(Nd + N²) -----------------------
// The form's value without its constant, in elements per (batch, head), summed over heads.
double asymptotic_form(const ModelPoint& m);
std::string asymptotic_formula(const ModelPoint& m);  // the form in words, e.g. "N²·d/Br"

}  // namespace flashio::analysis
