// The schedule-driven L2 simulation; see l2_sim.h.
#include "analysis/l2_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace flashio::analysis {
namespace {

// The lowest set bit of k: the step from a Fenwick tree's node to the next one it counts into.
size_t lowest_bit(size_t k) { return k & (~k + 1); }

}  // namespace

int64_t SimBuffer::chunks_per_head() const {
  if (!seg_chunk0.empty()) return seg_chunk0.back();
  return rows <= 0 ? 0 : (rows + chunk_rows - 1) / chunk_rows;
}

int64_t SimBuffer::chunk_bytes(int64_t chunk) const {
  const int64_t c = chunk % chunks_per_head();
  if (seg_chunk0.empty()) return (std::min(rows, (c + 1) * chunk_rows) - c * chunk_rows) * row_bytes;
  const size_t s = size_t(std::upper_bound(seg_chunk0.begin(), seg_chunk0.end(), c) - seg_chunk0.begin()) - 1;
  const int64_t first = seg_row0[s] + (c - seg_chunk0[s]) * chunk_rows;
  return (std::min(seg_row0[s + 1], first + chunk_rows) - first) * row_bytes;
}

int64_t SimBuffer::chunk_of_row(int64_t row) const {
  if (seg_row0.empty()) return row / chunk_rows;
  const size_t s = size_t(std::upper_bound(seg_row0.begin(), seg_row0.end(), row) - seg_row0.begin()) - 1;
  return seg_chunk0[s] + (row - seg_row0[s]) / chunk_rows;
}

SimBuffer segmented_buffer(std::string name, int64_t heads, const std::vector<int64_t>& segment_rows, int64_t row_bytes,
                           int64_t chunk_rows) {
  if (chunk_rows <= 0) throw std::invalid_argument("L2 simulation: a buffer's chunk_rows must be > 0");
  SimBuffer b{std::move(name), heads, 0, row_bytes, chunk_rows, {0}, {0}};
  for (const int64_t n : segment_rows) {
    if (n < 0) throw std::invalid_argument("L2 simulation: a segment of negative rows");
    b.rows += n;
    b.seg_row0.push_back(b.rows);
    b.seg_chunk0.push_back(b.seg_chunk0.back() + (n + chunk_rows - 1) / chunk_rows);
  }
  return b;
}

L2Model::L2Model(const std::vector<SimBuffer>& buffers, const L2SimConfig& cfg) : buffers_(buffers) {
  if (cfg.l2_bytes <= 0 || cfg.partitions <= 0 || cfg.sm_count <= 0)
    throw std::invalid_argument("L2 simulation: the device lacks an L2 size, partitions or SMs");
  int64_t n = 0;
  for (size_t b = 0; b < buffers_.size(); ++b) {
    if (buffers_[b].chunk_rows <= 0) throw std::invalid_argument("L2 simulation: a buffer's chunk_rows must be > 0");
    base_.push_back(n);
    n += buffers_[b].chunks();
  }
  buffer_of_.resize(size_t(n));
  bytes_.resize(size_t(n));
  for (size_t b = 0; b < buffers_.size(); ++b)
    for (int64_t c = 0; c < buffers_[b].chunks(); ++c) {
      buffer_of_[size_t(base_[b] + c)] = int32_t(b);
      bytes_[size_t(base_[b] + c)] = buffers_[b].chunk_bytes(c);
    }
  const L2DirtyRule& rule = cfg.dirty;
  auto share = [](double x) { return x >= 0 && x <= 1; };
  if (!share(rule.share) || !share(rule.victim_window) || !share(rule.band_from) || !share(rule.band_rate) ||
      (rule.band_rate > 0 && rule.band_from >= rule.share))
    throw std::invalid_argument("L2 simulation: the dirty rule's shares must lie in [0, 1], its band below its cap");
  dirty_ = rule;
  parts_.resize(size_t(cfg.partitions));
  for (auto& p : parts_) {
    p.capacity = cfg.l2_bytes / cfg.partitions;
    p.prev.assign(size_t(n), -1), p.next.assign(size_t(n), -1);
    p.in.assign(size_t(n), 0), p.dirty.assign(size_t(n), 0);
    if (rule.share > 0) {
      p.dirty_capacity = int64_t(rule.share * double(p.capacity));
      p.band_from = int64_t(rule.band_from * double(p.capacity));
      p.dstamp.assign(size_t(n), 0);
      p.stamp_chunk.assign(size_t(2 * n + 64) + 1, -1);  // twice the chunks: a restamp every n writes at most
      p.fenwick.assign(p.stamp_chunk.size(), 0);
    }
  }
  read_of_.assign(buffers_.size(), 0), write_of_.assign(buffers_.size(), 0);
}

int L2Model::home_of(int64_t id) const {
  if (parts_.size() == 1) return 0;
  uint64_t z = uint64_t(id) + 0x9e3779b97f4a7c15ull;  // splitmix64: addresses hashed evenly
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return int(z % parts_.size());
}

void L2Model::add_stamp(Part& p, int64_t stamp, int64_t bytes) {
  for (size_t k = size_t(stamp); k < p.fenwick.size(); k += lowest_bit(k)) p.fenwick[k] += bytes;
}

void L2Model::unlink_dirty(Part& p, int64_t id) {
  const size_t i = size_t(id);
  if (p.dirty_capacity <= 0 || !p.dirty[i]) return;
  add_stamp(p, p.dstamp[i], -bytes_[i]);
  p.stamp_chunk[size_t(p.dstamp[i])] = -1;
  p.dirty_used -= bytes_[i];
}

// The stamps run out: the live ones renumbered 1, 2, ... in write order, the tree rebuilt.
void L2Model::restamp(Part& p) {
  int64_t live = 0;
  for (int64_t s = 1; s <= p.now; ++s) {
    const int64_t id = p.stamp_chunk[size_t(s)];
    if (id < 0) continue;
    p.stamp_chunk[size_t(s)] = -1;
    p.stamp_chunk[size_t(++live)] = id;
    p.dstamp[size_t(id)] = live;
  }
  p.now = live;
  std::fill(p.fenwick.begin(), p.fenwick.end(), 0);
  for (size_t k = 1; k < p.fenwick.size(); ++k) {
    if (k <= size_t(live)) p.fenwick[k] += bytes_[size_t(p.stamp_chunk[k])];
    const size_t up = k + lowest_bit(k);
    if (up < p.fenwick.size()) p.fenwick[up] += p.fenwick[k];
  }
}

// The next victim: the dirty chunk holding byte rank u · victim_window · dirty bytes counted from
// the least recently written, u the partition's next draw of a golden-ratio (Weyl) sequence —
// uniform and deterministic; the oldest where that is `id`, the chunk being written; −1 when `id`
// is the only dirty chunk.
int64_t L2Model::draw_victim(const Part& p, int64_t id) const {
  const double u = double((p.draws * 0x9e3779b97f4a7c15ull) >> 11) * 0x1p-53;
  auto at_rank = [&](int64_t rank) {  // Fenwick descent: the first stamp whose prefix exceeds rank
    size_t pos = 0;
    for (size_t step = size_t(1) << (63 - __builtin_clzll(p.fenwick.size() - 1)); step > 0; step >>= 1)
      if (pos + step < p.fenwick.size() && p.fenwick[pos + step] <= rank) {
        pos += step;
        rank -= p.fenwick[pos];
      }
    return p.stamp_chunk[pos + 1];
  };
  const int64_t rank = std::min(p.dirty_used - 1, int64_t(u * dirty_.victim_window * double(p.dirty_used)));
  int64_t victim = at_rank(rank);
  if (victim == id) victim = at_rank(0);
  return victim == id ? -1 : victim;
}

void L2Model::clean(Part& p, int64_t victim) {
  write_back(victim);
  unlink_dirty(p, victim);
  p.dirty[size_t(victim)] = 0;
  ++p.draws;
}

void L2Model::write_back(int64_t id) {
  if (!counting_) return;
  write_ += bytes_[size_t(id)];
  write_of_[size_t(buffer_of_[size_t(id)])] += bytes_[size_t(id)];
}

// A chunk written (or reduced into): dirty, the most recently written. Past the partition's dirty
// capacity, victims (draw_victim) are written back until it holds again; within it but past the
// band, the write owes its bytes × the band's rate of write-back, paid in whole victims. Victims
// stay, clean.
void L2Model::mark_dirty(Part& p, int64_t id) {
  const size_t i = size_t(id);
  unlink_dirty(p, id);
  p.dirty[i] = 1;
  if (p.dirty_capacity <= 0) return;
  if (p.now + 1 >= int64_t(p.stamp_chunk.size())) restamp(p);
  p.dstamp[i] = ++p.now;
  p.stamp_chunk[size_t(p.now)] = id;
  add_stamp(p, p.now, bytes_[i]);
  p.dirty_used += bytes_[i];
  if (p.dirty_used > p.dirty_capacity) {
    for (int64_t victim; p.dirty_used > p.dirty_capacity && (victim = draw_victim(p, id)) >= 0;) clean(p, victim);
    return;
  }
  if (dirty_.band_rate <= 0 || p.dirty_used <= p.band_from) return;
  p.band_due += double(bytes_[i]) * dirty_.band_rate *
                std::min(1.0, double(p.dirty_used - p.band_from) / double(p.dirty_capacity - p.band_from));
  for (int64_t victim; (victim = draw_victim(p, id)) >= 0 && p.band_due >= double(bytes_[size_t(victim)]);) {
    p.band_due -= double(bytes_[size_t(victim)]);
    clean(p, victim);
  }
}

void L2Model::remove(Part& p, int64_t id) {
  const size_t i = size_t(id);
  unlink_dirty(p, id);
  if (p.prev[i] >= 0)
    p.next[size_t(p.prev[i])] = p.next[i];
  else
    p.head = p.next[i];
  if (p.next[i] >= 0)
    p.prev[size_t(p.next[i])] = p.prev[i];
  else
    p.tail = p.prev[i];
  p.prev[i] = p.next[i] = -1;
  p.in[i] = 0, p.dirty[i] = 0;
  p.used -= bytes_[i];
}

void L2Model::touch(Part& p, int64_t id) {
  const size_t i = size_t(id);
  if (p.head == id) return;
  // unlink, then push at the head
  if (p.prev[i] >= 0) p.next[size_t(p.prev[i])] = p.next[i];
  if (p.next[i] >= 0)
    p.prev[size_t(p.next[i])] = p.prev[i];
  else
    p.tail = p.prev[i];
  p.prev[i] = -1, p.next[i] = p.head;
  if (p.head >= 0) p.prev[size_t(p.head)] = id;
  p.head = id;
  if (p.tail < 0) p.tail = id;
}

void L2Model::make_room(Part& p, int64_t bytes) {
  while (p.tail >= 0 && p.used + bytes > p.capacity) {
    const int64_t victim = p.tail;
    if (p.dirty[size_t(victim)]) write_back(victim);
    remove(p, victim);
  }
}

void L2Model::insert(Part& p, int64_t id, bool dirty) {
  const size_t i = size_t(id);
  make_room(p, bytes_[i]);
  p.in[i] = 1, p.dirty[i] = 0;
  p.prev[i] = -1, p.next[i] = p.head;
  if (p.head >= 0) p.prev[size_t(p.head)] = id;
  p.head = id;
  if (p.tail < 0) p.tail = id;
  p.used += bytes_[i];
  if (dirty) mark_dirty(p, id);
}

int64_t L2Model::id_of(const SimAccess& a) const {
  if (a.buffer < 0 || size_t(a.buffer) >= buffers_.size() || a.chunk < 0 ||
      a.chunk >= buffers_[size_t(a.buffer)].chunks())
    throw std::invalid_argument(fmt::format("L2 simulation: chunk {} of buffer {} out of range", a.chunk, a.buffer));
  return base_[size_t(a.buffer)] + a.chunk;
}

void L2Model::access(const SimAccess& a, int sm) {
  const int64_t id = id_of(a);
  const size_t i = size_t(id);
  Part& home = parts_[size_t(home_of(id))];
  Part& near = parts_[size_t(sm) % parts_.size()];
  auto fetch = [&] {
    if (!counting_) return;
    read_ += bytes_[i];
    read_of_[size_t(a.buffer)] += bytes_[i];
  };
  if (a.op == SimOp::Read) {
    if (near.in[i]) return touch(near, id);
    if (&near != &home && home.in[i]) {
      touch(home, id);
      return insert(near, id, false);
    }
    fetch();
    insert(home, id, false);
    if (&near != &home) insert(near, id, false);
    return;
  }
  // Writes and reductions are performed at the home partition. A write from the far side passes
  // through the writer's partition, and a copy held there stays (up to date, clean there; the probe's
  // read-modify-write mode: a buffer read and written back by the same SMs occupies both partitions
  // as a read-only one does); a reduction's copy on the writer's side is stale (not measured).
  if (&near != &home && near.in[i]) {
    if (a.op == SimOp::Write)
      touch(near, id);
    else
      remove(near, id);
  }
  if (home.in[i]) {
    touch(home, id);
    mark_dirty(home, id);
    return;
  }
  if (a.op == SimOp::Red) fetch();
  insert(home, id, true);
}

L2SimResult simulate_l2(const std::vector<SimBuffer>& buffers, const std::vector<SimKernel>& kernels,
                        const L2SimConfig& cfg) {
  L2Model l2(buffers, cfg);
  L2SimResult out;
  // The time unit in which each (chunk, op, side) was last issued: reads per partition the reading
  // SM belongs to, then writes and reductions (performed at the chunk's home partition).
  const size_t stamp_ways = size_t(l2.partitions()) + 3;
  std::vector<int64_t> stamp(size_t(l2.chunks()) * stamp_ways, -1);
  int64_t unit = 0;
  for (const SimKernel& k : kernels) {
    if (k.blocks <= 0) {
      out.kernel_read.push_back(0), out.kernel_write.push_back(0);
      continue;
    }
    if (k.blocks_per_sm <= 0) throw std::invalid_argument("L2 simulation: " + k.name + " has no resident block");
    l2.count(k.counted);
    const int64_t r0 = l2.dram_read(), w0 = l2.dram_write();
    if (!k.replay.empty()) {
      if (k.join) throw std::invalid_argument("L2 simulation: " + k.name + " replays a timeline and joins");
      std::vector<int64_t> at(static_cast<size_t>(k.blocks), 0);
      std::vector<SimAccess> issued;
      for (const SimEvent& e : k.replay) {
        if (e.block < 0 || e.block >= k.blocks || e.sm < 0)
          throw std::invalid_argument("L2 simulation: " + k.name + " replays a block or SM out of range");
        issued.clear();
        k.step(e.block, at[size_t(e.block)]++, issued);
        out.accesses += int64_t(issued.size());
        ++out.steps;
        for (const SimAccess& x : issued) l2.access(x, e.sm);
      }
      out.kernel_read.push_back(l2.dram_read() - r0);
      out.kernel_write.push_back(l2.dram_write() - w0);
      continue;
    }
    const int64_t slots = std::min<int64_t>(k.blocks, int64_t(k.blocks_per_sm) * cfg.sm_count);
    std::vector<int64_t> block(static_cast<size_t>(slots)), at(static_cast<size_t>(slots), 0),
        steps(static_cast<size_t>(slots));
    // Join groups: blocks of each group still running their own steps; a slot whose block runs
    // its group's last step (the work of the last ticket).
    std::vector<int64_t> left;
    std::vector<uint8_t> last(static_cast<size_t>(slots), 0);
    if (k.join) {
      left.assign(static_cast<size_t>(k.blocks), 0);
      for (int64_t b = 0; b < k.blocks; ++b) {
        const int64_t g = k.join(b);
        if (g >= k.blocks) throw std::invalid_argument("L2 simulation: " + k.name + " joins a block past its groups");
        if (g >= 0) ++left[size_t(g)];
      }
    }
    int64_t next = 0, active = 0;
    for (int64_t s = 0; s < slots; ++s) {
      block[size_t(s)] = next++;
      steps[size_t(s)] = std::max<int64_t>(1, k.steps(block[size_t(s)]));
      ++active;
    }
    // One time unit per pass over the slots: every running block does its next step, the
    // blocks' accesses issued side by side (the first of every block, then the second, ...: blocks
    // run concurrently, and a coarse step's chunks would otherwise put a whole step of every other
    // block between two blocks' reads of one chunk); a block that ends hands its slot to the next
    // block in launch order, which starts at the next unit.
    std::vector<std::vector<SimAccess>> issued(static_cast<size_t>(slots));
    const double younger = k.younger_rate;
    if (!(younger > 0 && younger <= 1))
      throw std::invalid_argument("L2 simulation: " + k.name + "'s younger_rate must lie in (0, 1]");
    std::vector<double> credit(static_cast<size_t>(slots), 0.0);
    std::vector<int64_t> oldest(static_cast<size_t>(cfg.sm_count));
    std::vector<uint8_t> waits(static_cast<size_t>(slots), 0);
    while (active > 0) {
      size_t longest = 0;
      if (younger < 1.0) {
        std::fill(oldest.begin(), oldest.end(), k.blocks);
        for (int64_t s = 0; s < slots; ++s)
          if (block[size_t(s)] >= 0)
            oldest[size_t(s % cfg.sm_count)] = std::min(oldest[size_t(s % cfg.sm_count)], block[size_t(s)]);
        for (int64_t s = 0; s < slots; ++s) {
          const size_t si = size_t(s);
          waits[si] = 0;
          if (block[si] < 0 || block[si] == oldest[size_t(s % cfg.sm_count)]) continue;
          credit[si] += younger;
          if (credit[si] < 1.0)
            waits[si] = 1;
          else
            credit[si] -= 1.0;
        }
      }
      for (int64_t s = 0; s < slots; ++s) {
        const size_t si = size_t(s);
        issued[si].clear();
        if (block[si] < 0 || waits[si]) continue;
        k.step(block[si], at[si], issued[si]);
        longest = std::max(longest, issued[si].size());
        out.accesses += int64_t(issued[si].size());
        ++out.steps;
      }
      // Accesses of one time unit are simultaneous: a chunk that blocks of the unit read from one
      // side, or write, or reduce into, is one fill, one near copy, one dirty line — the unit's
      // later accesses of the same (chunk, op, side) are the same request and are not issued again
      // (issued one by one, a unit whose blocks touch more than the dirty share or the partition
      // between two of them would write a line back, or fetch it, twice within one unit).
      ++unit;
      for (size_t a = 0; a < longest; ++a)
        for (int64_t s = 0; s < slots; ++s)
          if (a < issued[size_t(s)].size()) {
            const SimAccess& x = issued[size_t(s)][a];
            const int sm = int(s % cfg.sm_count);
            const int64_t id = l2.id_of(x);
            const size_t key = size_t(id) * stamp_ways +
                               (x.op == SimOp::Read ? size_t(sm % l2.partitions()) : size_t(l2.partitions()) + size_t(x.op));
            if (stamp[key] == unit) continue;
            stamp[key] = unit;
            l2.access(x, sm);
          }
      for (int64_t s = 0; s < slots; ++s) {
        const size_t si = size_t(s);
        if (block[si] < 0 || waits[si] || ++at[si] < steps[si]) continue;
        if (k.join && !last[si]) {  // its ticket: the group's last block runs one step more
          const int64_t g = k.join(block[si]);
          if (g >= 0 && --left[size_t(g)] == 0) {
            last[si] = 1;
            ++steps[si];
            continue;
          }
        }
        last[si] = 0;
        at[si] = 0, credit[si] = 0;
        if (next < k.blocks) {
          block[si] = next++;
          steps[si] = std::max<int64_t>(1, k.steps(block[si]));
        } else {
          block[si] = -1;
          --active;
        }
      }
    }
    out.kernel_read.push_back(l2.dram_read() - r0);
    out.kernel_write.push_back(l2.dram_write() - w0);
  }
  out.dram_read = l2.dram_read(), out.dram_write = l2.dram_write();
  out.read_of = l2.read_of(), out.write_of = l2.write_of();
  return out;
}

}  // namespace flashio::analysis
