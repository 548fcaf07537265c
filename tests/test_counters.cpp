// The counter side that needs no GPU: the metric table per architecture, the record's
// counters object built from per-kernel values and its schema (the profiler's unavailable path:
// test_counter_session.cpp, in a build with CUDA).
#include <gtest/gtest.h>

#include <fstream>

#include "bench/core/counters.h"
#include "bench/core/record.h"
#include "bench/core/schema.h"
#include "tests/schema_test_util.h"

using namespace flashio;

namespace {

const MetricDef* find_key(const MetricTable& t, const std::string& key) {
  for (const auto& d : t.defs)
    if (d.key == key) return &d;
  return nullptr;
}

}  // namespace

TEST(MetricTable, EveryFamilyHasBothTrafficLevels) {
  const std::pair<int, int> ccs[] = {{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}};
  const char* families[] = {"turing", "ampere", "ampere", "ada", "hopper", "blackwell"};
  for (size_t i = 0; i < std::size(ccs); ++i) {
    const MetricTable t = metric_table(ccs[i].first, ccs[i].second);
    EXPECT_EQ(t.family, families[i]);
    for (const char* key : {"dram_read", "dram_write", "l2_read", "l2_write", "l2_red", "l2_atom", "duration"}) {
      const MetricDef* d = find_key(t, key);
      ASSERT_NE(d, nullptr) << t.family << " " << key;
      EXPECT_FALSE(d->metric.empty()) << t.family << " " << key;
    }
    EXPECT_EQ(find_key(t, "dram_read")->metric, "dram__bytes_read.sum");
    EXPECT_EQ(find_key(t, "l2_read")->metric, "l1tex__m_xbar2l1tex_read_bytes.sum");
    EXPECT_DOUBLE_EQ(find_key(t, "l2_red")->scale, 32.0);  // sectors → bytes
    EXPECT_DOUBLE_EQ(find_key(t, "duration")->scale, 1e-9);
  }
}

TEST(MetricTable, GmmaOnlyOnHopperWithAReason) {
  EXPECT_FALSE(find_key(metric_table(9, 0), "tensor_gmma_cycles")->metric.empty());
  const MetricDef* a100 = find_key(metric_table(8, 0), "tensor_gmma_cycles");
  ASSERT_NE(a100, nullptr);
  EXPECT_TRUE(a100->metric.empty());
  EXPECT_NE(a100->absent_reason.find("Hopper"), std::string::npos);
  EXPECT_EQ(find_key(metric_table(7, 5), "tensor_cycles")->metric, "sm__pipe_tensor_cycles_active.sum");
}

TEST(MetricTable, RejectsPreTuring) { EXPECT_THROW(metric_table(7, 0), std::invalid_argument); }

TEST(MetricTable, SetsSelectMetrics) {
  const MetricTable t = metric_table(9, 0);
  EXPECT_TRUE(metrics_of(t, CounterSet::Off).empty());
  const auto dram = metrics_of(t, CounterSet::Dram);
  EXPECT_EQ(dram,
            (std::vector<std::string>{"dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"}));
  const auto full = metrics_of(t, CounterSet::Full);
  EXPECT_EQ(full.size(), 10u);  // 7 core + smem wavefronts + hmma + gmma
  EXPECT_EQ(parse_counter_set("dram"), CounterSet::Dram);
  EXPECT_FALSE(parse_counter_set("all").has_value());
}

TEST(CountersJson, TotalsAndPerKernelBreakdown) {
  const MetricTable t = metric_table(9, 0);
  std::vector<RangeValues> ranges = {
      {"gemm",
       {{"dram__bytes_read.sum", 1000},
        {"l1tex__m_xbar2l1tex_read_bytes.sum", 4000},
        {"lts__t_sectors_op_red.sum", 10},
        {"gpu__time_duration.sum", 2000}}},
      {"softmax",
       {{"dram__bytes_read.sum", 500},
        {"l1tex__m_xbar2l1tex_read_bytes.sum", 600},
        {"lts__t_sectors_op_red.sum", 0},
        {"gpu__time_duration.sum", 1000}}},
      {"gemm",
       {{"dram__bytes_read.sum", 1000},
        {"l1tex__m_xbar2l1tex_read_bytes.sum", 4000},
        {"lts__t_sectors_op_red.sum", 1},
        {"gpu__time_duration.sum", 3000},
        {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 77}}},
  };
  const nlohmann::json c = counters_json(t, CounterSet::Full, 1, ranges, {{"x.sum", "not exposed"}});
  EXPECT_EQ(c["status"], "ok");
  EXPECT_EQ(c["passes"], 1);
  EXPECT_EQ(c["bytes"]["dram_read"], 2500);
  EXPECT_EQ(c["bytes"]["l2_read"], 8600);
  EXPECT_EQ(c["bytes"]["l2_red"], 11 * 32);
  EXPECT_FALSE(c["bytes"].contains("l2_atom"));  // never measured: absent, not zero
  EXPECT_NEAR(c["duration_s"].get<double>(), 6e-6, 1e-15);
  EXPECT_EQ(c["extras"]["smem_wavefronts"], 77.0);
  EXPECT_EQ(c["absent"]["x.sum"], "not exposed");
  ASSERT_EQ(c["kernels"].size(), 2u);
  EXPECT_EQ(c["kernels"][0]["name"], "gemm");  // first-launch order
  EXPECT_EQ(c["kernels"][0]["launches"], 2);
  EXPECT_EQ(c["kernels"][0]["bytes"]["l2_read"], 8000);
  EXPECT_NEAR(c["kernels"][0]["duration_s"].get<double>(), 5e-6, 1e-15);
  EXPECT_EQ(c["kernels"][1]["name"], "softmax");
  EXPECT_EQ(c["kernels"][1]["bytes"]["l2_red"], 0);
}

TEST(CountersJson, RecordWithCountersValidatesAndRoundTrips) {
  const MetricTable t = metric_table(8, 0);
  Record r;
  r.method = "flash2";
  r.problem.seqlen_q = 128;
  r.memory = MemoryStats{100, 200, 300, 600};
  r.counters =
      counters_json(t, CounterSet::Full, 1,
                    {{"k", {{"dram__bytes_read.sum", 64}, {"lts__t_sectors_srcunit_tex_op_write.sum", 2}}}}, {});
  const nlohmann::json j = to_json(r);
  const auto errors = validate_schema(record_schema(), j);
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
  const Record back = record_from_json(j);
  EXPECT_EQ(back.counters["bytes"]["l2_write"], 64);
  EXPECT_EQ(back.memory->total_bytes, 600);
}

TEST(CountersJson, SchemaRejectsUnknownByteLevel) {
  Record r;
  r.method = "flash2";
  r.counters = {{"status", "ok"}, {"bytes", {{"hbm_read", 1}}}};
  EXPECT_FALSE(validate_schema(record_schema(), to_json(r)).empty());
}

namespace {

KernelResources resources(int regs, int64_t local, int64_t dyn_smem, int threads, int grid_x, int blocks) {
  KernelResources r;
  r.registers_per_thread = regs;
  r.local_bytes_per_thread = local;
  r.static_smem_bytes = 0;
  r.dynamic_smem_bytes = dyn_smem;
  r.block[0] = threads, r.block[1] = r.block[2] = 1;
  r.grid[0] = grid_x, r.grid[1] = 16, r.grid[2] = 4;
  r.max_blocks_per_sm = blocks;
  return r;
}

}  // namespace

// Per-kernel resources (registers, local memory, shared memory, block, grid, occupancy) ride in
// the counters' kernel breakdown: the first launch's per kernel name, absent where the callbacks
// could not read them; the record validates and reads back field by field.
TEST(CountersJson, KernelResourcesRideInTheBreakdownAndRoundTrip) {
  const MetricTable t = metric_table(9, 0);
  std::vector<RangeValues> ranges = {
      {"flash1_fwd_kernel", {{"l1tex__m_xbar2l1tex_read_bytes.sum", 4000}}, resources(255, 32, 98304, 128, 8, 2)},
      {"convert", {{"l1tex__m_xbar2l1tex_read_bytes.sum", 64}}, std::nullopt},
      {"flash1_fwd_kernel", {{"l1tex__m_xbar2l1tex_read_bytes.sum", 4000}}, resources(1, 0, 0, 32, 1, 32)},
  };
  Record r;
  r.method = "flash1";
  r.counters = counters_json(t, CounterSet::Full, 1, ranges, {});
  const nlohmann::json j = to_json(r);
  const auto errors = validate_schema(record_schema(), j);
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
  const Record back = record_from_json(j);
  const auto& kernels = back.counters["kernels"];
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_FALSE(kernels[1].contains("resources"));  // not read: absent, never zeros
  const KernelResources k = kernel_resources_from_json(kernels[0]["resources"]);
  EXPECT_EQ(k.registers_per_thread, 255);  // the first launch's, not the second's
  EXPECT_EQ(k.local_bytes_per_thread, 32);
  EXPECT_EQ(k.dynamic_smem_bytes, 98304);
  EXPECT_EQ(k.threads(), 128);
  EXPECT_EQ(k.grid[0], 8);
  EXPECT_EQ(k.grid[1], 16);
  EXPECT_EQ(k.grid[2], 4);
  EXPECT_EQ(k.max_blocks_per_sm, 2);
  EXPECT_EQ(kernels[0]["resources"], k.to_json());
  EXPECT_THROW(kernel_resources_from_json(nlohmann::json{{"registers_per_thread", 3}}), std::invalid_argument);
  EXPECT_THROW(kernel_resources_from_json(
                   nlohmann::json{{"registers_per_thread", 3}, {"local_bytes_per_thread", 0}, {"block", {1, 2}}}),
               std::invalid_argument);
}

// Counters unavailable, launch callbacks working (no permission to read counters): the kernels'
// names and resources without bytes still validate.
TEST(CountersUnavailable, KernelsWithResourcesButNoCountersValidate) {
  Record r;
  r.method = "flash2";
  r.counters = counters_unavailable("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  r.counters["kernels"] = kernels_without_counters(
      {{"flash2_fwd_kernel", {}, resources(240, 0, 69632, 128, 512, 2)}, {"flash2_fwd_kernel", {}, std::nullopt}});
  const nlohmann::json j = to_json(r);
  const auto errors = validate_schema(record_schema(), j);
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
  const nlohmann::json kernels = record_from_json(j).counters["kernels"];
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0]["launches"], 2);
  EXPECT_EQ(kernels[0]["resources"]["registers_per_thread"], 240);
  EXPECT_FALSE(kernels[0].contains("bytes"));
}
