#include "bench/core/sparsity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "bench/core/json_input.h"
#include "bench/core/rng.h"

namespace flashio {

int64_t BlockMask::nnz() const {
  int64_t n = 0;
  for (uint8_t b : bits) n += b != 0;
  return n;
}

double BlockMask::density() const { return bits.empty() ? 0.0 : double(nnz()) / double(bits.size()); }

std::optional<PatternKind> parse_pattern(const std::string& s) {
  if (s.empty() || s == "none") return PatternKind::None;
  if (s == "butterfly") return PatternKind::Butterfly;
  if (s == "local") return PatternKind::Local;
  if (s == "random") return PatternKind::Random;
  if (s == "causal_block") return PatternKind::CausalBlock;
  if (s.rfind("file:", 0) == 0 && s.size() > 5) return PatternKind::File;
  return std::nullopt;
}

namespace {

constexpr uint64_t kPatternSeedSalt = 0xb10c5ba75e11ull;  // random masks: a stream apart from the inputs'

// A pattern file is small: ⌈N/Bs⌉² characters and a header.
constexpr int64_t kMaxPatternFileBytes = 2 * kMaxMaskBlocks + 4096;

std::string read_file(const std::string& path) { return read_input_file(path, kMaxPatternFileBytes); }

// rows·cols, refused beyond kMaxMaskBlocks (and never overflowing).
int64_t mask_cells(int64_t rows, int64_t cols, const std::string& what) {
  const auto n = checked_mul(rows, cols);
  if (!n || *n > kMaxMaskBlocks)
    throw std::invalid_argument(fmt::format("{}: a block mask of {} x {} blocks is more than flashio's bound of {} blocks",
                                            what, rows, cols, kMaxMaskBlocks));
  return *n;
}

bool is_power_of_two(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

}  // namespace

BlockMask parse_block_mask_text(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  int64_t lineno = 0;
  BlockMask m;
  bool have_header = false;
  int64_t row = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::string compact;
    for (char ch : line)
      if (ch != ' ' && ch != '\t' && ch != '\r') compact += ch;
    if (compact.empty()) continue;
    if (!have_header) {
      std::istringstream hs(line);
      std::string extra;
      if (!(hs >> m.rows >> m.cols) || (hs >> extra) || m.rows < 1 || m.cols < 1)
        throw std::invalid_argument(
            fmt::format("{}:{}: expected a header \"ROWS COLS\" (two positive integers)", source, lineno));
      m.bits.reserve(size_t(mask_cells(m.rows, m.cols, source)));
      have_header = true;
      continue;
    }
    if (row >= m.rows)
      throw std::invalid_argument(fmt::format("{}:{}: more than {} mask rows", source, lineno, m.rows));
    if (int64_t(compact.size()) != m.cols)
      throw std::invalid_argument(
          fmt::format("{}:{}: row {} has {} entries, expected {}", source, lineno, row, compact.size(), m.cols));
    for (char ch : compact) {
      if (ch != '0' && ch != '1')
        throw std::invalid_argument(fmt::format("{}:{}: '{}' is not 0 or 1", source, lineno, ch));
      m.bits.push_back(ch == '1');
    }
    ++row;
  }
  if (!have_header) throw std::invalid_argument(fmt::format("{}: empty block-mask file", source));
  if (row != m.rows) throw std::invalid_argument(fmt::format("{}: {} mask rows, expected {}", source, row, m.rows));
  return m;
}

std::string block_mask_text(const BlockMask& m) {
  std::string s = fmt::format("{} {}\n", m.rows, m.cols);
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c) s += m.at(r, c) ? '1' : '0';
    s += '\n';
  }
  return s;
}

std::optional<std::string> pattern_invalid_reason(const Problem& p) {
  const auto kind = parse_pattern(p.pattern);
  if (!kind)
    return fmt::format("unknown sparsity pattern '{}' (none, butterfly, local, random, causal_block, file:PATH)",
                       p.pattern);
  if (*kind == PatternKind::None) return std::nullopt;
  if (p.sparse_block < 1) return fmt::format("sparse block must be >= 1 (got {})", p.sparse_block);
  if (*kind == PatternKind::Random && !(p.sparse_density > 0.0 && p.sparse_density <= 1.0))
    return fmt::format("random pattern density must be in (0, 1] (got {})", p.sparse_density);
  if (*kind == PatternKind::Local && (p.sparse_window < 0 || p.sparse_global < 0))
    return "local pattern: window and global must be >= 0";
  if (*kind == PatternKind::File) {
    try {
      make_block_mask(p);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }
  return std::nullopt;
}

BlockMask make_block_mask(const Problem& p) {
  const auto kind = parse_pattern(p.pattern);
  if (!kind) throw std::invalid_argument(fmt::format("unknown sparsity pattern '{}'", p.pattern));
  if (p.sparse_block < 1) throw std::invalid_argument("sparse block must be >= 1");
  BlockMask m;
  m.block_r = m.block_c = p.sparse_block;
  if (p.seqlen_q < 1 || p.nk() < 1 || p.seqlen_q > kMaxExtent || p.nk() > kMaxExtent)
    throw std::invalid_argument(fmt::format("sequence lengths {} and {} are outside [1, {}]", p.seqlen_q, p.nk(), kMaxExtent));
  m.rows = (p.seqlen_q + p.sparse_block - 1) / p.sparse_block;
  m.cols = (p.nk() + p.sparse_block - 1) / p.sparse_block;
  m.bits.assign(size_t(mask_cells(m.rows, m.cols, p.pattern)), 0);
  auto set = [&](int64_t r, int64_t c) { m.bits[size_t(r * m.cols + c)] = 1; };
  switch (*kind) {
    case PatternKind::None:
      std::fill(m.bits.begin(), m.bits.end(), uint8_t(1));
      break;
    case PatternKind::Butterfly:
      for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t c = 0; c < m.cols; ++c)
          if (r == c || is_power_of_two(r ^ c)) set(r, c);
      break;
    case PatternKind::Local:
      for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t c = 0; c < m.cols; ++c)
          if (std::abs(r - c) <= p.sparse_window || r < p.sparse_global || c < p.sparse_global) set(r, c);
      break;
    case PatternKind::Random: {
      if (!(p.sparse_density > 0.0 && p.sparse_density <= 1.0))
        throw std::invalid_argument(fmt::format("random pattern density must be in (0, 1] (got {})", p.sparse_density));
      const int64_t total = m.rows * m.cols;
      const int64_t want = std::clamp<int64_t>(std::llround(p.sparse_density * double(total)), 1, total);
      // Partial Fisher-Yates: the first `want` cells of a seeded permutation.
      std::vector<int64_t> cells(static_cast<size_t>(total));
      for (int64_t c = 0; c < total; ++c) cells[size_t(c)] = c;
      SplitMix64 rng(p.seed ^ kPatternSeedSalt);
      for (int64_t k = 0; k < want; ++k) {
        const int64_t pick = k + int64_t(rng.next() % uint64_t(total - k));
        std::swap(cells[size_t(k)], cells[size_t(pick)]);
        m.bits[size_t(cells[size_t(k)])] = 1;
      }
      break;
    }
    case PatternKind::CausalBlock:
      for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t c = 0; c <= std::min(r, m.cols - 1); ++c) set(r, c);
      break;
    case PatternKind::File: {
      const std::string path = p.pattern.substr(5);
      if (p.from_record && p.pattern_mask.empty())
        throw std::invalid_argument(fmt::format(
            "{}: the record embeds no mask, and flashio never opens a path named in a result file", p.pattern));
      BlockMask f = p.from_record ? parse_block_mask_text(p.pattern_mask, p.pattern + " (the record's pattern_mask)")
                                  : parse_block_mask_text(read_file(path), path);
      if (f.rows != m.rows || f.cols != m.cols)
        throw std::invalid_argument(
            fmt::format("{}: mask is {}x{} blocks, but Nq={}, Nk={} with sparse block {} need {}x{}", path, f.rows,
                        f.cols, p.seqlen_q, p.nk(), p.sparse_block, m.rows, m.cols));
      m.bits = std::move(f.bits);
      break;
    }
  }
  return m;
}

BlockMask tile_mask(const BlockMask& m, int64_t seqlen_q, int64_t seqlen_k, int block_r, int block_c) {
  if (block_r < 1 || block_c < 1 || m.block_r % block_r != 0 || m.block_c % block_c != 0)
    throw std::invalid_argument(
        fmt::format("pattern block {}x{} is not a multiple of the tile {}x{}", m.block_r, m.block_c, block_r, block_c));
  BlockMask t;
  t.block_r = block_r;
  t.block_c = block_c;
  t.rows = (seqlen_q + block_r - 1) / block_r;
  t.cols = (seqlen_k + block_c - 1) / block_c;
  t.bits.resize(size_t(mask_cells(t.rows, t.cols, "tile mask")));
  for (int64_t r = 0; r < t.rows; ++r)
    for (int64_t c = 0; c < t.cols; ++c) t.bits[size_t(r * t.cols + c)] = m.allows(r * block_r, c * block_c);
  return t;
}

BlockMask make_block_mask(const Problem& p, int block_r, int block_c) {
  return tile_mask(make_block_mask(p), p.seqlen_q, p.nk(), block_r, block_c);
}

BlockLists by_rows(const BlockMask& m) {
  BlockLists l;
  l.ptr.push_back(0);
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c)
      if (m.at(r, c)) l.idx.push_back(int32_t(c));
    l.ptr.push_back(int32_t(l.idx.size()));
  }
  return l;
}

BlockLists by_cols(const BlockMask& m) {
  BlockLists l;
  l.ptr.push_back(0);
  for (int64_t c = 0; c < m.cols; ++c) {
    for (int64_t r = 0; r < m.rows; ++r)
      if (m.at(r, c)) l.idx.push_back(int32_t(r));
    l.ptr.push_back(int32_t(l.idx.size()));
  }
  return l;
}

std::vector<uint8_t> expand_mask(const BlockMask& m, int64_t seqlen_q, int64_t seqlen_k) {
  std::vector<uint8_t> e(size_t(mask_cells(seqlen_q, seqlen_k, "element mask")));
  for (int64_t i = 0; i < seqlen_q; ++i)
    for (int64_t j = 0; j < seqlen_k; ++j) e[size_t(i * seqlen_k + j)] = m.allows(i, j);
  return e;
}

}  // namespace flashio
