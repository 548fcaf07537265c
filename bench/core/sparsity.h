// Block-sparsity patterns (FlashAttention §3.3, Algorithm 5): a block mask
// M ∈ {0,1}^{⌈Nq/Bs⌉ × ⌈Nk/Bs⌉} over pattern blocks of Bs × Bs elements, shared by every
// batch and head. Element (i, j) may be attended iff M[i/Bs][j/Bs] = 1 (and the causal and
// key-padding masks allow it). A query row whose blocks are all zero has O = 0, LSE = -inf
// and zero gradients (the convention of a row that sees no key, docs/block-sparse.md).
//
// Patterns (Problem::pattern):
//   butterfly     flat butterfly: M[r][c] = 1 iff r == c or r XOR c is a power of two (the
//                 union of the butterfly factors' supports; density ≈ (1 + log2 T)/T)
//   local         |r − c| <= window, plus `global` leading rows and columns of ones
//   random        exactly round(density·R·C) blocks, chosen uniformly from the seed
//   causal_block  c <= r (block lower triangle)
//   file:PATH     read from a text file, format below (a regular file; never from a path named
//                 in a result file: records embed the mask, Problem::pattern_mask)
//
// File format: '#' starts a comment (to the end of the line); blank lines are ignored. The
// first remaining line holds "R C" (rows, columns), then R lines of C characters '0' or '1'
// (spaces between characters are allowed). R and C must equal ⌈Nq/Bs⌉ and ⌈Nk/Bs⌉ for the
// problem's Bs (--sparse-block).
//
// Plain C++ (flashio_core): the methods, the reference and the analysis share it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/core/problem.h"

namespace flashio {

// The most blocks a mask may have (rows·cols, overflow-checked): 2^24 (N = 512k at Bs = 128). A
// pattern at N = 2^40 is refused, not allocated.
inline constexpr int64_t kMaxMaskBlocks = int64_t(1) << 24;

// A block mask over rows × cols blocks of block_r × block_c elements, row-major.
struct BlockMask {
  int64_t rows = 0, cols = 0;
  int block_r = 0, block_c = 0;
  std::vector<uint8_t> bits;  // (rows, cols)

  bool at(int64_t r, int64_t c) const { return bits[size_t(r * cols + c)] != 0; }
  // Element (i, j) lies in a non-zero block.
  bool allows(int64_t i, int64_t j) const { return at(i / block_r, j / block_c); }
  int64_t nnz() const;
  double density() const;  // nnz / (rows·cols): the fraction s of non-zero blocks
};

// The pattern's kind, parsed from Problem::pattern; nullopt when unknown.
enum class PatternKind { None, Butterfly, Local, Random, CausalBlock, File };
std::optional<PatternKind> parse_pattern(const std::string& s);

// Why the problem's sparsity fields are unusable (unknown pattern, block < 1, density outside
// (0, 1], unreadable file), or nullopt. Reads the file of a file: pattern.
std::optional<std::string> pattern_invalid_reason(const Problem& p);

// The problem's mask in pattern blocks (sparse_block × sparse_block), deterministic in
// p.seed. Throws std::invalid_argument on an invalid pattern or a bad file.
BlockMask make_block_mask(const Problem& p);

// The same mask at a kernel's tile granularity (Br × Bc over Nq × Nk): tile (ti, tj) is
// non-zero iff its pattern block is. Requires Bs % Br == 0 and Bs % Bc == 0 (so a tile never
// straddles two pattern blocks); throws std::invalid_argument otherwise.
BlockMask tile_mask(const BlockMask& m, int64_t seqlen_q, int64_t seqlen_k, int block_r, int block_c);
BlockMask make_block_mask(const Problem& p, int block_r, int block_c);

// Compressed lists of the non-zero blocks: row r's columns are idx[ptr[r] .. ptr[r+1]) in
// increasing order (by_rows), or column c's rows likewise (by_cols).
struct BlockLists {
  std::vector<int32_t> ptr, idx;
};
BlockLists by_rows(const BlockMask& m);
BlockLists by_cols(const BlockMask& m);

// Element-level expansion (tests, small shapes): (seqlen_q, seqlen_k) row-major, 1 = allowed
// by the block mask alone (causal and padding not applied).
std::vector<uint8_t> expand_mask(const BlockMask& m, int64_t seqlen_q, int64_t seqlen_k);

// Parses the file format above; `source` names the input in error messages.
BlockMask parse_block_mask_text(const std::string& text, const std::string& source);
std::string block_mask_text(const BlockMask& m);  // the inverse, for writing pattern files

}  // namespace flashio
