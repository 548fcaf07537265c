#include "bench/core/varlen.h"

#include <algorithm>

#include <fmt/format.h>

#include "bench/core/json_input.h"
#include "bench/core/rng.h"

namespace flashio {

namespace {

constexpr const char* kGrammar = "uniform:A-B (0 <= A <= B) or file:PATH";

// A decimal integer in [0, kMaxExtent], the whole string; nullopt otherwise.
std::optional<int64_t> parse_count(const std::string& s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > kMaxExtent) return std::nullopt;
  return v;
}

}  // namespace

std::optional<SeqlensSpec> parse_seqlens(const std::string& s, std::string* why) {
  auto fail = [&](const std::string& msg) -> std::optional<SeqlensSpec> {
    if (why) *why = msg;
    return std::nullopt;
  };
  SeqlensSpec spec;
  if (s.rfind("file:", 0) == 0) {
    spec.kind = SeqlensSpec::Kind::File;
    spec.path = s.substr(5);
    if (spec.path.empty()) return fail(fmt::format("'{}' names no file: {}", s, kGrammar));
    return spec;
  }
  if (s.rfind("uniform:", 0) == 0) {
    const std::string range = s.substr(8);
    const size_t dash = range.find('-');
    if (dash == std::string::npos) return fail(fmt::format("'{}' is not a range: {}", s, kGrammar));
    const auto lo = parse_count(range.substr(0, dash)), hi = parse_count(range.substr(dash + 1));
    if (!lo || !hi)
      return fail(fmt::format("'{}': the bounds must be integers in [0, {}]: {}", s, kMaxExtent, kGrammar));
    if (*lo > *hi) return fail(fmt::format("'{}': the lower bound is above the upper one: {}", s, kGrammar));
    if (*hi == 0) return fail(fmt::format("'{}': every length would be 0 (no token at all)", s));
    spec.lo = *lo;
    spec.hi = *hi;
    return spec;
  }
  return fail(fmt::format("'{}' is not a length distribution: {}", s, kGrammar));
}

std::optional<std::vector<int32_t>> parse_seq_lengths_text(const std::string& text, const std::string& where,
                                                           std::string* why) {
  std::vector<int32_t> out;
  int line = 1;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == ',') {
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      size_t end = i;
      while (end < text.size() && std::string(" \t\r\n,#").find(text[end]) == std::string::npos) ++end;
      const std::string word = text.substr(i, end - i);
      const auto v = parse_count(word);
      if (!v) {
        std::string shown = word.substr(0, 40) + (word.size() > 40 ? "..." : "");
        for (char& ch : shown)  // one printable line whatever the file holds
          if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) ch = '?';
        if (why)
          *why = fmt::format("{} line {}: '{}' is not a sequence length (an integer in [0, {}])", where, line, shown,
                             kMaxExtent);
        return std::nullopt;
      }
      if (int64_t(out.size()) >= kMaxSequences) {
        if (why) *why = fmt::format("{}: more than {} sequences", where, kMaxSequences);
        return std::nullopt;
      }
      out.push_back(int32_t(*v));
      i = end;
    }
  }
  if (out.empty()) {
    if (why) *why = fmt::format("{} holds no sequence length (an empty length list)", where);
    return std::nullopt;
  }
  return out;
}

std::vector<int32_t> draw_uniform_lengths(int64_t lo, int64_t hi, uint64_t seed, int64_t count) {
  SplitMix64 rng(seed ^ 0x7a41e2ull);
  std::vector<int32_t> out(size_t(std::max<int64_t>(count, 0)));
  for (auto& len : out) len = int32_t(lo + int64_t(rng.next() % uint64_t(hi - lo + 1)));
  return out;
}

std::vector<int32_t> draw_uniform_lengths_for_tokens(int64_t lo, int64_t hi, uint64_t seed, int64_t tokens) {
  SplitMix64 rng(seed ^ 0x7a41e2ull);  // the same stream: the first lengths agree with draw_uniform_lengths
  std::vector<int32_t> out;
  int64_t total = 0;
  while (int64_t(out.size()) < kMaxSequences) {
    const int64_t len = lo + int64_t(rng.next() % uint64_t(hi - lo + 1));
    if (!out.empty() && total + len > tokens) break;
    out.push_back(int32_t(len));
    total += len;
  }
  return out;
}

std::optional<std::string> resolve_varlen(Problem& p, std::optional<int64_t> tokens, int64_t queries) {
  if (!p.varlen()) return std::nullopt;
  if (p.seqlen_k != 0)
    return std::string(
        "--seqlen-k does not apply to --seqlens points (the lengths are the key lengths); a varlen "
        "decode takes --seqlen-q");
  std::string why;
  const auto spec = parse_seqlens(p.seqlens, &why);
  if (!spec) return "--seqlens: " + why;
  if (spec->kind == SeqlensSpec::Kind::File) {
    std::string text;
    try {  // a regular file of bounded size only (json_input.h): no FIFO, device or folder
      text = read_input_file(spec->path, kMaxLengthsFileBytes);
    } catch (const std::exception& e) {
      return fmt::format("--seqlens: {}", e.what());
    }
    const auto lengths = parse_seq_lengths_text(text, spec->path, &why);
    if (!lengths) return "--seqlens: " + why;
    p.seq_lengths = *lengths;
  } else if (tokens) {
    p.seq_lengths = draw_uniform_lengths_for_tokens(spec->lo, spec->hi, p.seed, *tokens);
  } else {
    if (p.batch < 1 || p.batch > kMaxSequences)
      return fmt::format("--seqlens: the batch {} is not a count of sequences in [1, {}]", p.batch, kMaxSequences);
    p.seq_lengths = draw_uniform_lengths(spec->lo, spec->hi, p.seed, p.batch);
  }
  p.batch = int64_t(p.seq_lengths.size());
  const int64_t longest = *std::max_element(p.seq_lengths.begin(), p.seq_lengths.end());
  if (longest == 0) return fmt::format("--seqlens {}: every sequence has length 0 (no token at all)", p.seqlens);
  if (queries > 0 && queries >= longest)
    return fmt::format(
        "--seqlens {} with --seqlen-q {}: a varlen decode has fewer queries per sequence than its "
        "longest key length ({})",
        p.seqlens, queries, longest);
  p.seqlen_q = queries > 0 ? queries : longest;
  p.seqlen_k = queries > 0 ? longest : 0;
  return std::nullopt;
}

std::vector<int64_t> cu_seqlens(const Problem& p) {
  std::vector<int64_t> cu(p.seq_lengths.size() + 1, 0);
  for (size_t b = 0; b < p.seq_lengths.size(); ++b) cu[b + 1] = cu[b] + p.seq_lengths[b];
  return cu;
}

std::string varlen_name(const std::string& seqlens) {
  if (seqlens.rfind("file:", 0) == 0) {  // the base name: a path's slashes would split the point's name
    const auto slash = seqlens.find_last_of('/');
    return slash == std::string::npos ? seqlens : "file:" + seqlens.substr(slash + 1);
  }
  return seqlens;
}

std::optional<std::string> varlen_invalid_reason(const Problem& p) {
  if (!p.varlen()) {
    if (!p.seq_lengths.empty() || p.varlen_padded) return std::string("sequence lengths without --seqlens");
    return std::nullopt;
  }
  std::string why;
  if (!parse_seqlens(p.seqlens, &why)) return "--seqlens: " + why;
  if (p.seq_lengths.empty()) return fmt::format("--seqlens {}: an empty length list", p.seqlens);
  if (int64_t(p.seq_lengths.size()) != p.batch)
    return fmt::format("varlen: {} sequence lengths for batch {}", p.seq_lengths.size(), p.batch);
  int64_t longest = 0;
  for (int32_t len : p.seq_lengths) {
    if (len < 0) return fmt::format("varlen: a sequence length of {} (lengths are >= 0)", len);
    longest = std::max<int64_t>(longest, len);
  }
  if (longest == 0) return fmt::format("--seqlens {}: every sequence has length 0 (no token at all)", p.seqlens);
  if (longest != p.nk())  // self-attention: seqlen_q is the longest; varlen decode: seqlen_k is
    return fmt::format("varlen: seqlen{} {} is not the longest sequence ({})", p.key_varlen() ? "-k" : "", p.nk(),
                       longest);
  if (p.seqlen_q > p.nk())
    return fmt::format("varlen decode: {} queries per sequence, more than the longest key length ({})", p.seqlen_q,
                       p.nk());
  if (p.padding != Padding::None) return std::string("varlen lengths are the key lengths: --padding does not apply");
  if (p.paged() && !p.key_varlen())
    return std::string(
        "a paged K/V cache applies to a varlen decode only (--seqlens with --seqlen-q): varlen self-attention reads "
        "packed K/V (--kv-layout contiguous)");
  if (p.sparse()) return std::string("varlen with a block-sparse pattern is not supported");
  return std::nullopt;
}

}  // namespace flashio
