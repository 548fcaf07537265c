// Variable sequence lengths (--seqlens, issue 20): the grammar, the lengths it resolves to and the
// packed layout's offsets. Plain C++.
//
//   uniform:A-B   lengths uniform in [A, B] (0 <= A <= B), drawn from the problem's seed: with
//                 --batch b, b sequences; with --tokens T (FlashAttention-2's setting, the
//                 default), sequences drawn until the next would take the total past T (at
//                 least one): a pack of at most T tokens, as a data loader fills a token budget.
//   file:PATH     the lengths in a text file: non-negative integers separated by white space or
//                 commas, '#' comments to the end of a line; the file's count is the batch
//                 (--batch and --tokens do not apply).
// A length may be 0 (that sequence has no rows: nothing is written for it); the total must be
// positive. With --seqlen-q Nq (Nq below the longest length) the lengths are KEY lengths: a varlen
// decode (Problem::key_varlen), each sequence with Nq queries over its own keys, K/V packed, or
// with --kv-layout paged:P in ⌈L_b/P⌉ pages of its own (Problem::paged_varlen); a sequence of
// length 0 then has Nq rows that see no key (O = 0, L = −inf). Names end /varlen:uniform:A-B or
// /varlen:file:BASENAME (and /padded for the padded twin, --varlen-as padded; a paged point's
// /paged:P before them).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/core/problem.h"

namespace flashio {

struct SeqlensSpec {
  enum class Kind { Uniform, File } kind = Kind::Uniform;
  int64_t lo = 0, hi = 0;  // uniform
  std::string path;        // file
};

// At most this many sequences in one problem (a lengths file's count is bounded by it).
inline constexpr int64_t kMaxSequences = int64_t(1) << 20;
// A lengths file is read only when a regular file of at most this many bytes (json_input.h).
inline constexpr int64_t kMaxLengthsFileBytes = int64_t(16) << 20;

// Parses a --seqlens value; nullopt with `why` (one line naming the grammar) when malformed.
std::optional<SeqlensSpec> parse_seqlens(const std::string& s, std::string* why);

// The lengths in a lengths file's text (`where` names it in messages); nullopt with `why` when
// it does not parse, holds no length, or a length is beyond kMaxExtent.
std::optional<std::vector<int32_t>> parse_seq_lengths_text(const std::string& text, const std::string& where,
                                                           std::string* why);

// `count` lengths uniform in [lo, hi] from `seed` (the same seed, the same lengths).
std::vector<int32_t> draw_uniform_lengths(int64_t lo, int64_t hi, uint64_t seed, int64_t count);
// Lengths drawn as above until the next would take the total past `tokens` (at least one).
std::vector<int32_t> draw_uniform_lengths_for_tokens(int64_t lo, int64_t hi, uint64_t seed, int64_t tokens);

// Resolves p.seqlens into p.seq_lengths, p.batch (their count) and p.seqlen_q (the longest);
// `tokens`: --tokens when the batch was not given. `queries` > 0 (--seqlen-q): a varlen decode
// problem (Problem::key_varlen): the lengths are key lengths, seqlen_k the longest, seqlen_q =
// `queries`, which must be below the longest. A file: spec reads its file. Returns why it cannot
// (a spec that does not parse, a file that cannot be read or parsed, no token at all, too many
// queries).
std::optional<std::string> resolve_varlen(Problem& p, std::optional<int64_t> tokens, int64_t queries = 0);

// Cumulative offsets [B + 1] of a varlen problem's sequences (cu[0] = 0, cu[B] = T).
std::vector<int64_t> cu_seqlens(const Problem& p);

// The name part after "/varlen:": "uniform:A-B" or "file:BASENAME".
std::string varlen_name(const std::string& seqlens);

// Why a varlen problem is impossible (lengths not matching batch/seqlen, combined with an axis
// it does not support), or nullopt; also for a problem that is not varlen.
std::optional<std::string> varlen_invalid_reason(const Problem& p);

}  // namespace flashio
