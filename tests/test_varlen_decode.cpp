// Varlen decode on the CPU (issue 20, decode part): --seqlens with --seqlen-q Nq makes the lengths
// key lengths (Problem::key_varlen): the resolution, names, sizes, FLOPs and record of such a
// point, the combinations refused in one line, the sweep axis, the float64 reference through the
// padded twin (each sequence its own decode over its own keys), the split arithmetic of
// flash_decode over sequences of different lengths, and which methods run or skip the point; the
// paged varlen decode (--kv-layout paged:P: each sequence's keys in pages of its own) likewise.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "bench/core/inputs.h"
#include "bench/core/method.h"
#include "bench/core/reference.h"
#include "bench/core/rng.h"
#include "bench/core/varlen.h"
#include "bench/measure/check.h"
#include "bench/sweep/sweep.h"
#include "kernels/flash_decode/flash_decode_configs.h"
#include "kernels/flash_decode/flash_decode_method.h"
#include "tests/device_test_util.h"

using namespace flashio;

namespace {

DeviceInfo h100() { return testing_util::test_h100(); }

// A varlen decode with the given key lengths and nq queries per sequence (as resolve_varlen makes it).
Problem decode_varlen(std::vector<int32_t> lengths, int64_t nq, int64_t heads = 32, int64_t kv_heads = 8,
                      int64_t d = 128) {
  Problem p;
  p.seqlens = "file:lengths.txt";
  p.seq_lengths = std::move(lengths);
  p.batch = int64_t(p.seq_lengths.size());
  p.seqlen_q = nq;
  p.seqlen_k = *std::max_element(p.seq_lengths.begin(), p.seq_lengths.end());
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = d;
  return p;
}

// flash_decode over batch 8 of a Llama-3-8B-like layer (GQA 32:8, d 128), the other axes unset.
SweepSpec llama3_8b_decode_spec() {
  SweepSpec s;
  s.methods = {"flash_decode"};
  s.batch = {8};
  s.heads = {32};
  s.kv_heads = {8};
  s.head_dim = {128};
  return s;
}

// flash_decode supports p; every other method refuses it, with a reason naming `what` (the
// block-sparse methods refuse a dense point first, for their own reason).
void expect_only_flash_decode_runs(const Problem& p, const std::string& what) {
  for (const Method* m : builtin_registry().all()) {
    const Support s = m->supports(p, Pass::Fwd, h100());
    if (m->name() == "flash_decode") {
      EXPECT_TRUE(s) << s.reason;
      continue;
    }
    EXPECT_FALSE(s) << m->name();
    if (m->name().rfind("blocksparse", 0) == 0) continue;
    EXPECT_NE(s.reason.find(what), std::string::npos) << m->name() << ": " << s.reason;
  }
}

}  // namespace

TEST(VarlenDecodeProblem, QueriesMakeTheLengthsKeyLengths) {
  Problem p;
  p.batch = 4;
  p.heads = 32;
  p.kv_heads = 8;
  p.head_dim = 128;
  p.seqlens = "uniform:100-5000";
  ASSERT_FALSE(resolve_varlen(p, std::nullopt, 3));
  const int64_t longest = *std::max_element(p.seq_lengths.begin(), p.seq_lengths.end());
  const int64_t total = std::accumulate(p.seq_lengths.begin(), p.seq_lengths.end(), int64_t(0));
  EXPECT_TRUE(p.key_varlen());
  EXPECT_TRUE(p.packed());
  EXPECT_FALSE(p.packed_q());
  EXPECT_EQ(p.seqlen_q, 3);
  EXPECT_EQ(p.nk(), longest);
  EXPECT_EQ(p.total_tokens(), total);
  EXPECT_EQ(p.query_tokens(), 4 * 3);
  EXPECT_EQ(p.q_elements(), 4 * 32 * 3 * 128);  // Q dense
  EXPECT_EQ(p.lse_elements(), 4 * 32 * 3);
  EXPECT_EQ(p.kv_elements(), 8 * total * 128);  // K/V packed, no padding
  EXPECT_FALSE(p.invalid_reason()) << *p.invalid_reason();
  // Named like the prefill varlen points, with Nq and the longest key length as Nq != Nk points are.
  EXPECT_EQ(p.name(), fmt::format("b:4/h:32/kvh:8/n:3/nk:{}/d:128/fp16/varlen:uniform:100-5000", longest));
  // FLOPs: each sequence's Nq queries against its own keys.
  EXPECT_DOUBLE_EQ(flops(p, Pass::Fwd), 4.0 * 32 * 3 * double(total) * 128);
  // Compulsory bytes: Q, O, L dense, K and V the real keys only.
  EXPECT_EQ(compulsory_bytes(p, Pass::Fwd), 2 * (4 * 32 * 3 * 128) * 2 + 2 * (8 * total * 128) * 2 + 4 * 32 * 3 * 4);
  // The record reads back as the same varlen decode.
  const Problem back = problem_from_json(to_json(p));
  EXPECT_TRUE(back.key_varlen());
  EXPECT_EQ(back.name(), p.name());
  EXPECT_EQ(back.seq_lengths, p.seq_lengths);
  // Without --seqlen-q: self-attention, as before.
  Problem self = p;
  self.seqlen_k = 0;
  self.seq_lengths.clear();
  ASSERT_FALSE(resolve_varlen(self, std::nullopt));
  EXPECT_FALSE(self.key_varlen());
  EXPECT_EQ(self.seqlen_q, longest);
  EXPECT_EQ(self.query_tokens(), total);
}

TEST(VarlenDecodeProblem, ImpossibleCombinationsSayWhyInOneLine) {
  Problem p;
  p.batch = 3;
  p.seqlens = "uniform:10-12";
  const auto many = resolve_varlen(p, std::nullopt, 12);  // Nq not below the longest
  ASSERT_TRUE(many);
  EXPECT_NE(many->find("fewer queries per sequence than its longest key length"), std::string::npos) << *many;
  Problem k;
  k.batch = 3;
  k.seqlens = "uniform:10-12";
  k.seqlen_k = 100;
  const auto with_k = resolve_varlen(k, std::nullopt, 1);
  ASSERT_TRUE(with_k);
  EXPECT_NE(with_k->find("--seqlen-k does not apply"), std::string::npos) << *with_k;
  auto reason = [](const Problem& q) { return q.invalid_reason().value_or(""); };
  Problem d = decode_varlen({0, 5, 900}, 1);
  EXPECT_EQ(reason(d), "");
  Problem pad = d;
  pad.padding = Padding::Random;
  EXPECT_NE(reason(pad).find("--padding does not apply"), std::string::npos);
  Problem paged = d;  // paged per sequence (PagedVarlen below); a page size flashio refuses stays refused
  paged.kv_page = 64;
  EXPECT_EQ(reason(paged), "");
  paged.kv_page = 100;
  EXPECT_NE(reason(paged).find("not a positive multiple of 64"), std::string::npos) << reason(paged);
  Problem wrong_nk = d;
  wrong_nk.seqlen_k = 1000;
  EXPECT_NE(reason(wrong_nk).find("seqlen-k 1000 is not the longest sequence (900)"), std::string::npos)
      << reason(wrong_nk);
  Problem over = d;
  over.seqlen_q = 901;
  EXPECT_NE(reason(over).find("more than the longest key length"), std::string::npos) << reason(over);
}

TEST(VarlenDecodeSweep, TheQueriesAxisAppliesToVarlenPointsOnly) {
  SweepSpec s = llama3_8b_decode_spec();
  s.seqlens = {"", "uniform:1024-16384"};
  s.varlen_queries = {1, 4};
  s.varlen_padded = {false, true};
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 1u + 2 * 2);  // the dense point once; the varlen ones per Nq and layout
  EXPECT_FALSE(points[0].problem.varlen());
  EXPECT_EQ(points[0].problem.seqlen_q, 1024);
  for (size_t i = 1; i < points.size(); ++i) {
    const Problem& p = points[i].problem;
    EXPECT_TRUE(p.key_varlen()) << p.name();
    EXPECT_EQ(p.seq_lengths, points[1].problem.seq_lengths);  // the same sequences in every variant
  }
  EXPECT_EQ(points[1].problem.seqlen_q, 1);  // layout outside, queries inside
  EXPECT_FALSE(points[1].problem.varlen_padded);
  EXPECT_EQ(points[2].problem.seqlen_q, 4);
  EXPECT_FALSE(points[2].problem.varlen_padded);
  EXPECT_EQ(points[3].problem.seqlen_q, 1);
  EXPECT_TRUE(points[3].problem.varlen_padded);  // the padded twin: K/V [B, Hkv, longest, d], key lengths
  EXPECT_TRUE(points[3].problem.key_padded());
  SweepSpec bad = s;
  bad.seqlens = {"uniform:1-8"};
  bad.varlen_queries = {16};
  EXPECT_THROW(expand(bad), std::invalid_argument);
}

// The reference of a varlen decode, through the padded twin with key lengths, is each sequence's
// own decode over its own keys (the twin's first L_b keys): the math the kernels must match.
TEST(VarlenDecodeReference, EachSequenceIsADecodeOverItsOwnKeys) {
  for (bool causal : {false, true}) {
    Problem p = decode_varlen({17, 0, 1, 40}, 3, 4, 2, 32);
    p.causal = causal;
    const HostInputs in = make_inputs(p, false);
    const HostTensors t{in.q.data(), in.k.data(), in.v.data(), in.key_lengths.data()};
    std::vector<double> out, lse;
    const auto rows = all_rows(p);
    ASSERT_EQ(int64_t(rows.size()), p.batch * p.heads * p.seqlen_q);  // every sequence has Nq rows, even L = 0
    reference_rows(p, t, rows, out, lse, 1);
    size_t at = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t n = p.seq_lengths[size_t(b)];
      if (n == 0) {  // no key: O = 0 and L = −inf
        for (int64_t r = 0; r < p.heads * p.seqlen_q; ++r, ++at) {
          EXPECT_EQ(lse[at], -std::numeric_limits<double>::infinity());
          for (int64_t c = 0; c < p.head_dim; ++c) EXPECT_EQ(out[at * size_t(p.head_dim) + size_t(c)], 0.0);
        }
        continue;
      }
      Problem one;  // sequence b alone: dense, Nq queries, n keys
      one.heads = p.heads;
      one.kv_heads = p.kv_heads;
      one.head_dim = p.head_dim;
      one.seqlen_q = p.seqlen_q;
      one.seqlen_k = n;
      one.causal = causal;
      std::vector<uint16_t> q, k, v;
      const size_t qlen = size_t(p.seqlen_q * p.head_dim), klen = size_t(n * p.head_dim);
      for (int64_t h = 0; h < p.heads; ++h) {
        const size_t base = size_t((b * p.heads + h)) * qlen;
        q.insert(q.end(), in.q.begin() + long(base), in.q.begin() + long(base + qlen));
      }
      for (int64_t h = 0; h < p.kvh(); ++h) {
        const size_t base = size_t((b * p.kvh() + h) * p.nk() * p.head_dim);
        k.insert(k.end(), in.k.begin() + long(base), in.k.begin() + long(base + klen));
        v.insert(v.end(), in.v.begin() + long(base), in.v.begin() + long(base + klen));
      }
      std::vector<double> o1, l1;
      reference_rows(one, {q.data(), k.data(), v.data(), nullptr}, all_rows(one), o1, l1, 1);
      for (size_t r = 0; r < l1.size(); ++r, ++at) {
        ASSERT_EQ(rows[at].b, b);
        EXPECT_EQ(lse[at], l1[r]) << "causal " << causal << " b " << b << " row " << r;
        for (int64_t c = 0; c < p.head_dim; ++c)
          EXPECT_EQ(out[at * size_t(p.head_dim) + size_t(c)], o1[r * size_t(p.head_dim) + size_t(c)]);
      }
    }
    EXPECT_EQ(at, rows.size());
  }
}

TEST(VarlenDecodeCheck, RowsAreEverySequencesQueriesAndStoredDense) {
  const Problem p = decode_varlen({0, 1, 17, 1013}, 4, 8, 2, 64);
  const auto rows = rows_to_check(p, 1e12);
  EXPECT_EQ(int64_t(rows.size()), 4 * 8 * 4);
  const std::vector<int64_t> cu = cu_seqlens(p);
  for (const RowId& r : rows) EXPECT_EQ(stored_row(p, cu, r), (r.b * p.heads + r.h) * p.seqlen_q + r.i);
  // Sampled: the empty sequence's rows are among them (its O = 0, L = −inf are checked).
  const auto sampled = rows_to_check(p, 1.0);
  EXPECT_TRUE(std::any_of(sampled.begin(), sampled.end(), [](const RowId& r) { return r.b == 0; }));
}

TEST(VarlenDecodeSplit, EachSequenceGetsItsOwnSplitsOfTheSharedTileCount) {
  using kernels::decode_sequence_splits;
  using kernels::decode_tiles;
  EXPECT_EQ(decode_sequence_splits(0, 4), 1);  // no key: one split writes O = 0, L = −inf
  EXPECT_EQ(decode_sequence_splits(1, 4), 1);
  EXPECT_EQ(decode_sequence_splits(4, 4), 1);
  EXPECT_EQ(decode_sequence_splits(5, 4), 2);
  EXPECT_EQ(decode_sequence_splits(65, 5), 13);
  EXPECT_EQ(decode_tiles(0, 1, false), 0);
  EXPECT_EQ(decode_tiles(4097, 1, false), 65);
  EXPECT_EQ(decode_tiles(4097, 3, true), 1);  // top-left causal: keys 0..2
  const DeviceInfo dev = h100();              // 132 SMs, one block of d 128 per SM
  // One long sequence (512 tiles) and 16 short ones (1 tile): GQA 32:8, Nq 1, 8 blocks per split.
  std::vector<int32_t> lengths(17, 64);
  lengths[0] = 32768;
  const Problem p = decode_varlen(lengths, 1);
  const auto s = flash_decode_choose_split(p, dev);
  EXPECT_EQ(s.tiles, 512);
  // The blocks that run: 8·(16 + n); 16 splits of the long one make 256 of 264 (two waves, 97 %).
  EXPECT_EQ(s.splits, 16);
  EXPECT_EQ(s.tiles_per_split, 32);
  // The padded twin counts every sequence's 8·n blocks (17·8·n): 12 splits, 1632 blocks, 95 % of 13 waves.
  Problem twin = p;
  twin.varlen_padded = true;
  EXPECT_EQ(flash_decode_choose_split(twin, dev).splits, 12);
  EXPECT_EQ(flash_decode_choose_split(twin, dev).splits,
            flash_decode_choose_split(
                [&] {
                  Problem dense = p;  // the same rule as a dense problem of the longest length
                  dense.seqlens.clear();
                  dense.seq_lengths.clear();
                  return dense;
                }(),
                dev)
                .splits);
  // Equal lengths: the varlen rule is the dense one.
  const Problem equal = decode_varlen(std::vector<int32_t>(8, 8192), 1);
  Problem dense = equal;
  dense.seqlens.clear();
  dense.seq_lengths.clear();
  EXPECT_EQ(flash_decode_choose_split(equal, dev).splits, flash_decode_choose_split(dense, dev).splits);
  EXPECT_EQ(flash_decode_choose_split(equal, dev).splits, 2);
  // Every split of every sequence has a tile; no sequence has more splits than the grid.
  for (const Problem& q :
       {p, equal, decode_varlen({0, 1, 17, 1013, 4097}, 4), decode_varlen({0, 1, 17, 1013, 4097}, 16, 8, 1, 64)}) {
    const auto sq = flash_decode_choose_split(q, dev);
    for (int32_t len : q.seq_lengths) {
      const int tiles = decode_tiles(len, q.seqlen_q, q.causal);
      const int n = decode_sequence_splits(tiles, sq.tiles_per_split);
      ASSERT_LE(n, sq.splits) << q.name();
      if (tiles > 0) ASSERT_LT(int64_t(n - 1) * sq.tiles_per_split, tiles) << q.name();
    }
  }
}

TEST(VarlenDecodeMethods, FlashDecodeRunsThePackedPointOthersSkipWithTheReason) {
  const DeviceInfo dev = h100();
  const Problem p = decode_varlen({0, 1, 17, 1013, 4097}, 4);
  expect_only_flash_decode_runs(p, "packed varlen decode");
  Problem many = decode_varlen({100, 4097}, 17);
  const Support s17 = builtin_registry().find("flash_decode")->supports(many, Pass::Fwd, dev);
  EXPECT_NE(s17.reason.find("at most 16 queries"), std::string::npos) << s17.reason;
  EXPECT_NE(s17.reason.find("--varlen-as padded"), std::string::npos) << s17.reason;
  // A self-attention varlen point is not flash_decode's.
  Problem self = decode_varlen({5, 9}, 9);
  self.seqlen_k = 0;
  EXPECT_FALSE(builtin_registry().find("flash_decode")->supports(self, Pass::Fwd, dev));
  // The padded twin runs on every method with key padding and Nq != Nk.
  Problem twin = p;
  twin.varlen_padded = true;
  EXPECT_TRUE(builtin_registry().find("flash_decode")->supports(twin, Pass::Fwd, dev));
  EXPECT_TRUE(builtin_registry().find("flash2")->supports(twin, Pass::Fwd, dev));
}

// Paged varlen decode (--seqlens with --seqlen-q and --kv-layout paged:P): the sequences' keys in
// pages of their own through a block table, as vLLM stores a batch.
TEST(PagedVarlenDecodeProblem, NamedWithBothSuffixesAndCountedAsThePackedKeys) {
  Problem p = decode_varlen({0, 5, 900, 64, 129}, 2);
  p.kv_page = 64;
  ASSERT_FALSE(p.invalid_reason()) << *p.invalid_reason();
  EXPECT_TRUE(p.paged_varlen());
  EXPECT_TRUE(p.packed());
  EXPECT_FALSE(p.packed_kv());
  EXPECT_EQ(p.name(), "b:5/h:32/kvh:8/n:2/nk:900/d:128/fp16/paged:64/varlen:file:lengths.txt");
  Problem packed = p;
  packed.kv_page = 0;
  EXPECT_TRUE(packed.packed_kv());
  EXPECT_FALSE(packed.paged_varlen());
  // The logical keys, not the pages' slots: the same elements, bytes and FLOPs as packed.
  EXPECT_EQ(p.kv_elements(), packed.kv_elements());
  EXPECT_EQ(p.kv_elements(), 8 * (0 + 5 + 900 + 64 + 129) * 128);
  EXPECT_EQ(compulsory_bytes(p, Pass::Fwd), compulsory_bytes(packed, Pass::Fwd));
  EXPECT_DOUBLE_EQ(flops(p, Pass::Fwd), flops(packed, Pass::Fwd));
  // The record reads back as the same paged varlen decode.
  const Problem back = problem_from_json(to_json(p));
  EXPECT_TRUE(back.paged_varlen());
  EXPECT_EQ(back.kv_page, 64);
  EXPECT_EQ(back.name(), p.name());
  // Its padded twin is a dense paged problem with key lengths: every sequence ⌈Nk/P⌉ pages.
  Problem twin = p;
  twin.varlen_padded = true;
  ASSERT_FALSE(twin.invalid_reason()) << *twin.invalid_reason();
  EXPECT_FALSE(twin.paged_varlen());
  EXPECT_TRUE(twin.key_padded());
  EXPECT_EQ(twin.name(), p.name() + "/padded");
  EXPECT_EQ(kv_pages_of(twin).pages, 5 * 15);
}

TEST(PagedVarlenDecodeProblem, VarlenSelfAttentionRefusesPagesInOneLine) {
  Problem self = decode_varlen({5, 9}, 9);  // self-attention: seqlen_q the longest, no seqlen_k
  self.seqlen_k = 0;
  ASSERT_FALSE(self.key_varlen());
  ASSERT_FALSE(self.invalid_reason()) << *self.invalid_reason();
  self.kv_page = 64;
  const std::string why = self.invalid_reason().value_or("");
  EXPECT_NE(why.find("a paged K/V cache applies to a varlen decode only"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  self.varlen_padded = true;  // its padded twin too: no method reads pages for self-attention
  EXPECT_TRUE(self.invalid_reason());
}

// Sequence b's ⌈L_b/P⌉ logical pages, dealt a seeded permutation of the pool of Σ_b ⌈L_b/P⌉
// physical pages: each physical page holds exactly one logical page, a sequence of length 0 has
// none, the rest of each row is -1; the dense table is the permutation of B·⌈Nk/P⌉ pages it was.
TEST(PagedVarlenDecodeProblem, EachSequenceHasItsOwnPagesOfAShuffledPool) {
  for (int page : {64, 128}) {
    Problem p = decode_varlen({0, 5, 900, 64, 129, 1}, 1, 4, 2, 64);
    p.kv_page = page;
    const KvPages k = kv_pages_of(p);
    const int64_t pps = (900 + page - 1) / page;
    EXPECT_EQ(k.pages_per_seq, pps);
    ASSERT_EQ(k.table.size(), size_t(6 * pps));
    int64_t want = 0;
    for (size_t b = 0; b < 6; ++b) {
      const int32_t used = int32_t((p.seq_lengths[b] + page - 1) / page);
      EXPECT_EQ(k.used[b], used) << b;
      want += used;
      for (int64_t j = used; j < pps; ++j) EXPECT_EQ(k.table[b * size_t(pps) + size_t(j)], -1) << b << " " << j;
    }
    EXPECT_EQ(k.pages, want);
    EXPECT_EQ(k.used[0], 0);
    EXPECT_EQ(k.elements(), want * 2 * page * 64);
    std::vector<int32_t> seen;
    for (int32_t e : k.table)
      if (e >= 0) seen.push_back(e);
    std::sort(seen.begin(), seen.end());
    std::vector<int32_t> pool(static_cast<size_t>(want));
    std::iota(pool.begin(), pool.end(), 0);
    EXPECT_EQ(seen, pool);  // every physical page once
    bool shuffled = false;  // not the identity: no accidental contiguity
    for (size_t i = 0, n = 0; i < k.table.size(); ++i)
      if (k.table[i] >= 0) shuffled = shuffled || k.table[i] != int32_t(n++);
    EXPECT_TRUE(shuffled);
    // Every real key's element has its own slot in the pool (no two share one, none past the pool).
    std::set<int64_t> slots;
    for (int64_t b = 0; b < 6; ++b)
      for (int64_t hk = 0; hk < 2; ++hk)
        for (int64_t key = 0; key < p.seq_lengths[size_t(b)]; ++key)
          for (int64_t c = 0; c < 64; c += 21) {
            const int64_t at = k.offset(b, hk, key, c, 2, 64);
            ASSERT_GE(at, 0);
            ASSERT_LT(at, k.elements());
            slots.insert(at);
          }
    EXPECT_EQ(slots.size(), size_t(2 * (5 + 900 + 64 + 129 + 1) * 4));
    // The offset of a key is in its own page's rows.
    for (int64_t key : {0, 63, 64, 899})
      EXPECT_EQ(k.offset(2, 1, key, 5, 2, 64),
                ((int64_t(k.table[size_t(2 * pps + key / page)]) * 2 + 1) * page + key % page) * 64 + 5);
  }
  // Dense: the table is the permutation itself (the layout of every committed paged record).
  Problem dense = decode_varlen({900, 900, 900}, 1, 4, 2, 64);
  dense.seqlens.clear();
  dense.seq_lengths.clear();
  dense.kv_page = 64;
  const KvPages k = kv_pages_of(dense);
  EXPECT_EQ(k.pages, 3 * 15);
  std::vector<int32_t> perm(size_t(k.pages));
  std::iota(perm.begin(), perm.end(), 0);
  SplitMix64 rng(dense.seed ^ 0x9a6e5ull);
  for (int64_t i = k.pages - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(rng.next() % uint64_t(i + 1))]);
  EXPECT_EQ(k.table, perm);
}

TEST(PagedVarlenDecodeMethods, FlashDecodeRunsItOthersSkipWithTheReason) {
  const DeviceInfo dev = h100();
  Problem p = decode_varlen({0, 1, 17, 1013, 4097}, 4);
  p.kv_page = 64;
  expect_only_flash_decode_runs(p, "paged");
  // The split rule is the packed one: the same blocks run.
  Problem packed = p;
  packed.kv_page = 0;
  EXPECT_EQ(flash_decode_choose_split(p, dev).splits, flash_decode_choose_split(packed, dev).splits);
}

TEST(PagedVarlenDecodeSweep, TheLayoutAxisNamesPagedVarlenPoints) {
  SweepSpec s = llama3_8b_decode_spec();
  s.seqlens = {"uniform:1-4000"};
  s.varlen_queries = {1};
  s.kv_page = {0, 64};
  s.varlen_padded = {false, true};
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 4u);
  int paged_varlen = 0, paged_twin = 0;
  for (const auto& pt : points) {
    EXPECT_FALSE(pt.problem.invalid_reason()) << pt.problem.name();
    EXPECT_EQ(pt.problem.seq_lengths, points[0].problem.seq_lengths);
    paged_varlen += pt.problem.paged_varlen();
    paged_twin += pt.problem.paged() && pt.problem.varlen_padded;
    if (pt.problem.paged())
      EXPECT_NE(pt.problem.name().find("/paged:64/varlen:uniform:1-4000"), std::string::npos) << pt.problem.name();
  }
  EXPECT_EQ(paged_varlen, 1);
  EXPECT_EQ(paged_twin, 1);
}
