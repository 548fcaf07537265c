// The L2 ↔ DRAM level simulated from a kernel's schedule (issue 19): thread blocks start in the
// hardware's launch order (linear block index, blockIdx.x fastest) into the resident slots of
// the GPU (blocks per SM × SMs), each block runs its tile steps one per time unit (every step
// costs the same: a causal block with fewer tiles ends early and frees its slot for the next
// block), and the chunks each step reads, writes or reduces go through a model of the L2:
//
// * capacity: the device's L2 bytes, split into `partitions` equal partitions (GA100, GH100:
//   two, joined by a fabric). Every chunk has a home partition (a hash of its address); an SM
//   belongs to partition sm mod partitions (the block scheduler deals consecutive blocks to
//   GPCs in turn, and GPCs alternate between the partitions — a simplification: the side probe,
//   tests/gpu_sm_side_probe.cu, finds the SMs split in GPC/TPC runs, 66/66 on one H200 and 64/68 on
//   another, and the deal's order depends on the grid; docs/io-model.md, "Which side an SM is on"). A
//   read from the far side looks up the SM's own partition first, then the home one, and leaves a
//   clean copy in its own partition (the "point of coherence" copy the A100/H100 whitepapers
//   describe): data read by SMs of both sides is held twice, data read by one side once;
// * replacement: least recently used per partition (the micro-benchmark in
//   tests/gpu_l2_probe.cu, scripts/l2_probe.sh, tests this on the GPU);
// * writes: a whole chunk written (tile stores of whole rows, 32-byte sectors) is allocated
//   dirty in its home partition without a DRAM read; a copy the writer's own partition holds
//   (a chunk it read from the far side, then writes: flash1's fp32 O, a read-modify-write) stays
//   there — the probe's read-modify-write mode on the H200 loses what its read mode loses, one
//   SM or every SM, where dropping the copy would keep the whole buffer up to the L2's size;
//   a reduction (dQ atomics, a
//   read-modify-write) reads its chunk from DRAM on a miss and leaves it dirty; a dirty chunk
//   is written back when evicted, or before, by the device's dirty rule (GH100: kGh100L2Dirty,
//   measured; below): past a share of the partition, and in a band below it. A chunk written
//   back stays, clean. Dirty chunks left at the end stay in L2 (the counters' ranges end with
//   the last kernel);
// * counting: DRAM bytes are counted while a `counted` kernel runs (the counters' per-kernel
//   ranges; cudaMemsetAsync is no kernel of them, its evictions are not counted, the dirty
//   lines it leaves are).
//
// * time: every running block does one step per time unit — but, in a kernel with a younger_rate < 1 (one
//   whose issue order was measured), an SM's younger blocks, which step in that share of the units. The
//   steps of one time unit are simultaneous; their accesses are issued side by
//   side (every block's first, then every block's second, ...), and a unit's repeated request
//   of one chunk — read from the same side, written, or reduced into — is one request (one fill,
//   one near copy, one dirty line), however much else the unit touches between the two in issue
//   order (a coarse step's unit may touch more than the L2).
//
// The L2 starts empty (the counter pass cleans it with a read-only sweep: clean lines cost
// nothing to evict). Granularity: chunks of whole rows of one buffer of one head (the tiles'
// rows, or a multiple: analysis/dram_model.h, coarsening); bytes are counted exactly per chunk.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flashio::analysis {

// A buffer of the trace: `heads` × `rows` rows of `row_bytes`, cut per head into chunks of
// `chunk_rows` rows (the last chunk of a head shorter). Segmented (segmented_buffer): each head's
// rows are consecutive segments, each cut into chunks of its own (the last of a segment shorter),
// so that no chunk holds rows of two segments — packed varlen tensors, a segment per sequence:
// the kernels' loads never share a sector between two sequences (rows are whole sectors), and a
// chunk straddling two would be fetched for each.
struct SimBuffer {
  std::string name;
  int64_t heads = 0, rows = 0, row_bytes = 0, chunk_rows = 1;
  // Segmented only: segment s holds rows [seg_row0[s], seg_row0[s + 1]) and chunks
  // [seg_chunk0[s], seg_chunk0[s + 1]) of each head. Empty: one segment.
  std::vector<int64_t> seg_row0, seg_chunk0;
  int64_t chunks_per_head() const;
  int64_t chunks() const { return heads * chunks_per_head(); }
  int64_t chunk_bytes(int64_t chunk) const;
  int64_t chunk_of_row(int64_t row) const;  // the chunk of a head holding row `row` of it
};

// A buffer of `heads` heads whose rows are the consecutive segments `segment_rows`.
SimBuffer segmented_buffer(std::string name, int64_t heads, const std::vector<int64_t>& segment_rows, int64_t row_bytes,
                           int64_t chunk_rows);

enum class SimOp : uint8_t { Read, Write, Red };

struct SimAccess {
  int32_t buffer = 0;
  int64_t chunk = 0;  // index within the buffer: head · chunks_per_head + chunk of the head
  SimOp op = SimOp::Read;
};

// One step of a block as a measured timeline ordered it (replay): the block and the SM it ran on.
struct SimEvent {
  int64_t block = 0;
  int sm = 0;
};

// One launch: `blocks` thread blocks in launch order, `blocks_per_sm` resident per SM; block b
// runs steps(b) ≥ 1 steps, step s touching what step(b, s, out) appends.
//
// `join` (optional): blocks that finish as a group — each takes a ticket when its own steps are
// done, and the last one to take it does the group's remaining work (flash_decode's combine by
// the last split of a row tile). join(b) is block b's group, in [0, blocks), or −1 (none). Which
// block is last is decided by the schedule, not by launch order: the group's block that ends its
// steps(b) steps last (in one time unit, the later slot) runs one step more, step index steps(b),
// in the next time unit — after every write of its group.
struct SimKernel {
  std::string name;
  bool counted = true;  // inside the counters' ranges (false: cudaMemsetAsync)
  int64_t blocks = 0;
  int blocks_per_sm = 1;
  std::function<int64_t(int64_t)> steps;
  std::function<void(int64_t, int64_t, std::vector<SimAccess>&)> step;
  std::function<int64_t(int64_t)> join;
  // The progress of an SM's younger blocks: every block but the SM's oldest running one (the lowest launch
  // index) does a step in this share of the time units (1: lock-step).
  double younger_rate = 1.0;
  // Optional: the kernel's steps in the order a measured timeline puts them (every block's steps in
  // its own order, blocks interleaved by their stamps; each block's steps(b) of them), each step's
  // accesses issued one by one from the SM it ran on — instead of the slots' lock-step units.
  // No join.
  std::vector<SimEvent> replay;
};

// A pass as the simulation sees it: its buffers and its launches in stream order.
struct SimTrace {
  std::vector<SimBuffer> buffers;
  std::vector<SimKernel> kernels;
};

// How a partition's dirty chunks are written back before they are evicted (GH100: measured by
// scripts/l2_probe.sh, tests/gpu_l2_probe.cu; the fit to every probe row is
// results/crosscheck/issue19-l2-probe/soft-dirty-fit/REPORT.md):
// * share: the cap. Past this share of the partition, dirty chunks are written back (and stay,
//   clean) until the dirty bytes are within it again. 0: no limit, every chunk stays dirty until
//   it is evicted. The probe's write mode (a kernel writes a buffer of S, the next reads 3 × L2,
//   its DRAM writes are the dirty bytes the L2 still held): every S from 0.55 to 2 × L2 leaves
//   0.446–0.468 of the L2 dirty, from one SM or from all (median 0.457 on the H200, 0.464 on the
//   H100; tests/test_l2_sim.cpp checks the constant against both tables);
// * victim_window: the chunk written back is drawn from this oldest share of the dirty bytes
//   (counted in write order; 0: the least recently written). A cyclic read-modify-write of 1.1 ×
//   the cap writes back half its lines per pass (0.50 measured), not all of them (strict least
//   recently written) nor 0.18 (a uniformly random victim): 0.25 fits 0.5–0.75 × L2;
// * band_from, band_rate: the cleaning band. Once a write leaves the partition's dirty bytes past
//   band_from of it (but within the cap), that write also writes back `rate` of its bytes, the
//   rate rising linearly from 0 at band_from to band_rate at the cap, victims drawn as above:
//   a cyclic read-modify-write at 0.375 of the L2 writes back 0.012 of its bytes per pass, at
//   0.42 already 0.135 (a single write there loses only 0.01–0.02).
// The draws are deterministic (a golden-ratio sequence per partition). Unfitted, stated in the
// report: write-backs during a pure read right after a write near the cap (`a` mode), one SM's
// read-modify-write with its near partition full (0.04–0.16 more than simulated), a reversed
// pass inside the band (0.04–0.08 less). Measured on GH100 only: other chips get no limit
// (l2_dirty_rule_of).
struct L2DirtyRule {
  double share = 0;
  double victim_window = 0;
  double band_from = 0, band_rate = 0;
};
inline constexpr L2DirtyRule kGh100L2Dirty{0.455, 0.25, 0.37, 0.25};

struct L2SimConfig {
  int64_t l2_bytes = 0;
  int partitions = 1;
  int sm_count = 0;
  L2DirtyRule dirty;
};

struct L2SimResult {
  int64_t dram_read = 0, dram_write = 0;           // counted kernels only
  std::vector<int64_t> read_of, write_of;          // per buffer
  std::vector<int64_t> kernel_read, kernel_write;  // per kernel
  int64_t steps = 0, accesses = 0;                 // the simulation's work
};

// Runs the kernels one after another (stream order) through one L2. Throws
// std::invalid_argument on a malformed trace (a chunk out of range, no SMs or L2).
L2SimResult simulate_l2(const std::vector<SimBuffer>& buffers, const std::vector<SimKernel>& kernels,
                        const L2SimConfig& cfg);

// The same L2 driven directly (the tests' and the probe's streams): accesses from SM `sm`.
class L2Model {
 public:
  L2Model(const std::vector<SimBuffer>& buffers, const L2SimConfig& cfg);
  void access(const SimAccess& a, int sm);
  void count(bool on) { counting_ = on; }
  int64_t dram_read() const { return read_; }
  int64_t dram_write() const { return write_; }
  const std::vector<int64_t>& read_of() const { return read_of_; }
  const std::vector<int64_t>& write_of() const { return write_of_; }
  int home_of(int64_t id) const;
  int partitions() const { return int(parts_.size()); }
  int64_t chunks() const { return int64_t(buffer_of_.size()); }
  int64_t id_of(const SimAccess& a) const;  // the chunk's global id (throws when out of range)

 private:
  struct Part {
    int64_t capacity = 0, used = 0;
    int64_t head = -1, tail = -1;  // most / least recently used
    std::vector<int64_t> prev, next;
    std::vector<uint8_t> in, dirty;
    // The dirty rule (dirty_capacity > 0): the dirty chunks in write order, as a Fenwick tree
    // over write stamps holding each live stamp's bytes (victims are found by byte rank).
    int64_t dirty_capacity = 0, dirty_used = 0, band_from = 0;
    std::vector<int64_t> dstamp;       // chunk → stamp of its last write (while dirty)
    std::vector<int64_t> stamp_chunk;  // stamp → chunk, −1: no longer live
    std::vector<int64_t> fenwick;      // over stamps 1..size: bytes of the live ones
    int64_t now = 0;                   // stamps used
    double band_due = 0;               // bytes of write-back the band owes
    uint64_t draws = 0;                // victims drawn
  };
  void touch(Part& p, int64_t id);
  void mark_dirty(Part& p, int64_t id);
  void unlink_dirty(Part& p, int64_t id);
  void add_stamp(Part& p, int64_t stamp, int64_t bytes);
  void restamp(Part& p);
  int64_t draw_victim(const Part& p, int64_t id) const;
  void clean(Part& p, int64_t victim);
  void write_back(int64_t id);
  void insert(Part& p, int64_t id, bool dirty);
  void remove(Part& p, int64_t id);
  void make_room(Part& p, int64_t bytes);

  std::vector<SimBuffer> buffers_;
  std::vector<int64_t> base_;       // first global id of each buffer
  std::vector<int32_t> buffer_of_;  // global id → buffer
  std::vector<int64_t> bytes_;      // global id → chunk bytes
  std::vector<Part> parts_;
  L2DirtyRule dirty_;
  bool counting_ = true;
  int64_t read_ = 0, write_ = 0;
  std::vector<int64_t> read_of_, write_of_;
};

}  // namespace flashio::analysis
