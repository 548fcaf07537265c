// The decode axis and the flash_decode method on the CPU: --kv-layout's parsing and names, the
// paged storage's block table, the split-count choice, and the points flash_decode and the
// other methods refuse, each with its reason (no GPU needed: a DeviceInfo stands in for one).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "bench/core/method.h"
#include "bench/core/problem.h"
#include "bench/core/record.h"
#include "bench/core/schema.h"
#include "bench/sweep/sweep.h"
#include "kernels/flash_decode/flash_decode_configs.h"
#include "kernels/flash_decode/flash_decode_method.h"
#include "tests/schema_test_util.h"
#include "tests/device_test_util.h"

using namespace flashio;

namespace {

DeviceInfo h100() { return testing_util::test_h100(); }

Problem decode(int64_t b, int64_t h, int64_t kvh, int64_t nq, int64_t nk, int64_t d = 128) {
  Problem p;
  p.batch = b;
  p.heads = h;
  p.kv_heads = kvh;
  p.seqlen_q = nq;
  p.seqlen_k = nk;
  p.head_dim = d;
  return p;
}

}  // namespace

TEST(KvLayout, ParsesContiguousAndPagesOfMultiplesOf64) {
  std::string why;
  EXPECT_EQ(parse_kv_layout("contiguous", &why), 0);
  EXPECT_EQ(parse_kv_layout("paged:64", &why), 64);
  EXPECT_EQ(parse_kv_layout("paged:256", &why), 256);
  for (const char* bad : {"paged:32", "paged:0", "paged:", "paged", "paged:64x", "paged:-64", "paged:+64", "paged: 64",
                          "Paged:64", "blocked:64", "", "paged:9999999999999", "contiguous:64"}) {
    why.clear();
    EXPECT_FALSE(parse_kv_layout(bad, &why)) << bad;
    EXPECT_NE(why.find("multiple of 64"), std::string::npos) << bad << ": " << why;  // says what is allowed
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
}

TEST(KvLayout, PagedNamesCarryTheLayoutContiguousNamesDoNotChange) {
  Problem p = decode(8, 32, 8, 1, 8192);
  EXPECT_EQ(p.name(), "b:8/h:32/kvh:8/n:1/nk:8192/d:128/fp16");
  EXPECT_EQ(to_json(p).count("kv_layout"), 0u);
  p.kv_page = 64;
  EXPECT_EQ(p.name(), "b:8/h:32/kvh:8/n:1/nk:8192/d:128/fp16/paged:64");
  EXPECT_EQ(point_name("flash_decode", Pass::Fwd, p),
            "flash_decode/fwd/b:8/h:32/kvh:8/n:1/nk:8192/d:128/fp16/paged:64");
  const nlohmann::json j = to_json(p);
  EXPECT_EQ(j.at("kv_layout"), "paged:64");
  const Problem back = problem_from_json(j);
  EXPECT_EQ(back.kv_page, 64);
  EXPECT_EQ(back.name(), p.name());
  nlohmann::json bad = j;
  bad["kv_layout"] = "paged:48";
  EXPECT_THROW(problem_from_json(bad), std::runtime_error);
}

TEST(KvLayout, InvalidPageSizesAreRefusedByTheProblem) {
  Problem p = decode(1, 8, 8, 1, 100);
  p.kv_page = 96;
  ASSERT_TRUE(p.invalid_reason());
  EXPECT_NE(p.invalid_reason()->find("multiple of 64"), std::string::npos);
  p.kv_page = 128;
  EXPECT_FALSE(p.invalid_reason());
}

TEST(KvLayout, SweepExpandsTheLayoutAxis) {
  SweepSpec s;
  s.methods = {"flash_decode"};
  s.kv_page = {0, 64};
  s.seqlen = {1};
  s.seqlen_k = {1000};
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].problem.kv_page, 0);
  EXPECT_EQ(points[1].problem.kv_page, 64);
}

TEST(KvPages, TheBlockTableIsASeededPermutationAndEveryLogicalElementHasItsOwnSlot) {
  Problem p = decode(3, 4, 2, 1, 1013, 8);
  p.kv_page = 64;
  const KvPages k = kv_pages_of(p);
  EXPECT_EQ(k.pages_per_seq, 16);  // ⌈1013 / 64⌉
  EXPECT_EQ(k.pages, 48);
  std::vector<int32_t> sorted = k.table;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 48; ++i) EXPECT_EQ(sorted[size_t(i)], i);
  int in_place = 0;
  for (int i = 0; i < 48; ++i) in_place += k.table[size_t(i)] == i;
  EXPECT_LT(in_place, 6);                    // shuffled, not the identity
  EXPECT_EQ(kv_pages_of(p).table, k.table);  // deterministic in the seed
  Problem other = p;
  other.seed += 1;
  EXPECT_NE(kv_pages_of(other).table, k.table);
  std::set<int64_t> slots;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t hk = 0; hk < 2; ++hk)
      for (int64_t key = 0; key < 1013; ++key)
        for (int64_t c = 0; c < 8; ++c) {
          const int64_t at = k.offset(b, hk, key, c, 2, 8);
          ASSERT_GE(at, 0);
          ASSERT_LT(at, k.elements());
          slots.insert(at);
        }
  EXPECT_EQ(slots.size(), size_t(3 * 2 * 1013 * 8));
}

TEST(FlashDecodeSplit, FillsTheH100InEvenWaves) {
  const DeviceInfo dev = h100();
  // GQA 32:8, d 128: four stages, one block of 143,616 bytes per SM, 132 slots.
  auto s = flash_decode_choose_split(decode(8, 32, 8, 1, 8192), dev);
  EXPECT_EQ(s.blocks_per_sm, 1);
  EXPECT_EQ(s.row_tiles, 1);
  EXPECT_EQ(s.tiles, 128);
  EXPECT_EQ(s.splits, 2);  // 64 (batch, K/V head) pairs × 2 = 128 blocks of 132 slots
  EXPECT_EQ(s.tiles_per_split, 64);
  s = flash_decode_choose_split(decode(32, 32, 8, 1, 8192), dev);
  EXPECT_EQ(s.splits, 1);  // 256 blocks: two waves of 132, 97 % even
  s = flash_decode_choose_split(decode(1, 32, 8, 1, 131072), dev);
  EXPECT_EQ(s.splits, 16);  // 8 × 16 = 128 blocks
  EXPECT_EQ(s.tiles_per_split, 128);
  s = flash_decode_choose_split(decode(8, 32, 8, 1, 8192, 64), dev);
  EXPECT_EQ(s.blocks_per_sm, 3);  // d 64: four stages, 76,032 bytes (shared memory alone: registers may allow fewer)
  s = flash_decode_choose_split(decode(1, 32, 8, 1, 17), dev);
  EXPECT_EQ(s.splits, 1);  // one tile: nothing to split
  Problem causal = decode(1, 32, 8, 3, 8192);
  causal.causal = true;  // top-left: the queries see keys 0..2 only
  s = flash_decode_choose_split(causal, dev);
  EXPECT_EQ(s.tiles, 1);
  EXPECT_EQ(s.splits, 1);
  s = flash_decode_choose_split(decode(1, 32, 8, 16, 4096), dev);
  EXPECT_EQ(s.row_tiles, 4);  // 4 query heads × 16 queries = 64 rows
}

TEST(FlashDecodeSplit, EverySplitHasTilesAndAtLeastTheMinimum) {
  const DeviceInfo dev = h100();
  for (int64_t b : {1, 3, 8, 17, 128})
    for (int64_t nk : {1, 17, 64, 65, 1013, 4097, 32768, 131072})
      for (auto [h, kvh] : {std::pair<int64_t, int64_t>{32, 8}, {8, 1}, {64, 8}})
        for (int64_t d : {64, 128, 256}) {
          const auto s = flash_decode_choose_split(decode(b, h, kvh, 1, nk, d), dev);
          const int tiles = int((nk + 63) / 64);
          ASSERT_EQ(s.tiles, tiles);
          ASSERT_GE(s.splits, 1);
          ASSERT_LE(s.splits, kernels::kDecodeMaxSplits);
          ASSERT_GE(int64_t(s.splits) * s.tiles_per_split, tiles);      // every tile in a split
          ASSERT_LT(int64_t(s.splits - 1) * s.tiles_per_split, tiles);  // no split empty
          if (s.splits > 1) ASSERT_GE(s.tiles_per_split, kernels::kDecodeMinTilesPerSplit);
        }
}

TEST(FlashDecodeMethod, RefusesWhatItCannotRunInWords) {
  const Method* m = builtin_registry().find("flash_decode");
  ASSERT_NE(m, nullptr);
  const DeviceInfo dev = h100();
  Problem p = decode(3, 32, 8, 3, 1013);
  EXPECT_TRUE(m->supports(p, Pass::Fwd, dev)) << m->supports(p, Pass::Fwd, dev).reason;
  p.kv_page = 64;
  EXPECT_TRUE(m->supports(p, Pass::Fwd, dev));
  const Support bwd = m->supports(p, Pass::Bwd, dev);
  EXPECT_FALSE(bwd);
  EXPECT_NE(bwd.reason.find("forward only"), std::string::npos) << bwd.reason;
  EXPECT_FALSE(m->supports(p, Pass::FwdBwd, dev));
  Problem many = decode(1, 8, 8, 17, 1000);
  EXPECT_NE(m->supports(many, Pass::Fwd, dev).reason.find("at most 16 queries"), std::string::npos);
  Problem d96 = decode(1, 8, 8, 1, 1000, 96);
  EXPECT_FALSE(m->supports(d96, Pass::Fwd, dev));
  Problem drop = decode(1, 8, 8, 1, 1000);
  drop.dropout = 0.1;
  EXPECT_FALSE(m->supports(drop, Pass::Fwd, dev));
  Problem tile = decode(1, 8, 8, 1, 1000);
  tile.block_c = 128;
  EXPECT_NE(m->supports(tile, Pass::Fwd, dev).reason.find("16x64"), std::string::npos);
  DeviceInfo small = dev;
  small.smem_per_block_optin = 101376;  // sm_86: d 256's 143 KB does not fit
  EXPECT_FALSE(m->supports(decode(1, 8, 8, 1, 1000, 256), Pass::Fwd, small));
  EXPECT_TRUE(m->supports(decode(1, 8, 8, 1, 1000, 64), Pass::Fwd, small));
}

TEST(FlashDecodeMethod, OtherMethodsSkipPagedPointsWithTheReason) {
  const DeviceInfo dev = h100();
  Problem p = decode(2, 8, 8, 1, 1000);
  p.kv_page = 64;
  for (const Method* m : builtin_registry().all()) {
    if (m->name() == "flash_decode") continue;
    const Support s = m->supports(p, Pass::Fwd, dev);
    EXPECT_FALSE(s) << m->name();
    if (m->name().rfind("blocksparse", 0) == 0) continue;  // they refuse a dense point first
    EXPECT_NE(s.reason.find("paged"), std::string::npos) << m->name() << ": " << s.reason;
  }
}

// The bandwidth figures of a timed record: compulsory bytes at the peak, the counters' DRAM
// bytes over the median time; written, read back and valid against the result schema.
TEST(Bandwidth, FromTheTimeAndTheCountersIntoTheSchema) {
  Record r;
  r.method = "flash_decode";
  r.problem = decode(8, 32, 8, 1, 8192);
  r.problem.kv_page = 64;
  r.tiles = Tiles{};
  TimeStats t;
  t.median_s = 100e-6;
  t.min_s = t.max_s = t.mean_s = 100e-6;
  t.reps = 3;
  r.time = t;
  EXPECT_FALSE(bandwidth_of(r, 0.0));  // no peak: no figures
  const int64_t q = 8 * 32 * 128 * 2, kv = 8 * 8 * 8192 * 128 * 2, lse = 8 * 32 * 4;
  EXPECT_EQ(compulsory_bytes(r.problem, Pass::Fwd), q + 2 * kv + q + lse);
  auto b = bandwidth_of(r, 3.35e12);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->compulsory_bytes, q + 2 * kv + q + lse);
  EXPECT_DOUBLE_EQ(b->ideal_s, double(b->compulsory_bytes) / 3.35e12);
  EXPECT_DOUBLE_EQ(b->ideal_fraction, b->ideal_s / 100e-6);
  EXPECT_FALSE(b->dram_bytes);  // counters not collected
  r.counters = {{"status", "ok"}, {"set", "dram"}, {"bytes", {{"dram_read", 2.7e8}, {"dram_write", 1e6}}}};
  b = bandwidth_of(r, 3.35e12);
  ASSERT_TRUE(b && b->dram_bytes);
  EXPECT_EQ(*b->dram_bytes, int64_t(271000000));
  EXPECT_DOUBLE_EQ(*b->achieved_bytes_per_s, 2.71e8 / 100e-6);
  EXPECT_DOUBLE_EQ(*b->peak_fraction, 2.71e8 / 100e-6 / 3.35e12);
  r.bandwidth = b;
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j.at("bandwidth").at("dram_bytes"), 271000000);
  EXPECT_EQ(j.at("problem").at("kv_layout"), "paged:64");
  const Record back = record_from_json(j);
  ASSERT_TRUE(back.bandwidth);
  EXPECT_EQ(back.bandwidth->compulsory_bytes, b->compulsory_bytes);
  EXPECT_DOUBLE_EQ(*back.bandwidth->peak_fraction, *b->peak_fraction);
  EXPECT_TRUE(validate_schema(record_schema(), j).empty()) << validate_schema(record_schema(), j).front();
  nlohmann::json bad = j;
  bad["bandwidth"]["ideal_s"] = -1;
  EXPECT_FALSE(validate_schema(record_schema(), bad).empty());
  bad = j;
  bad["bandwidth"]["gb_per_s"] = 1;  // no field beyond the documented ones
  EXPECT_FALSE(validate_schema(record_schema(), bad).empty());
}
