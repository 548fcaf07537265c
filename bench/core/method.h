// Method: one attention implementation (fused kernel, baseline, CPU reference).
// A method says what it supports — and why not, as a sentence — and prepares a Plan for
// a problem: the Plan owns the workspace and launches passes on device buffers, so the
// runner can time launches alone. A method is two halves: its description (info(), supports(),
// its tile choice: plain C++, built everywhere) and its launch side (a PlanFactory in its CUDA
// code), joined when the registry is built. A build without CUDA has the descriptions alone:
// `list`, `run --dry-run` and the analysis work there; plan() says why it cannot.
// Adding a method: docs/adding-a-method.md.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/core/device_info.h"
#include "bench/core/problem.h"
#include "bench/core/tile_shape.h"

typedef struct CUstream_st* cudaStream_t;  // as in the CUDA runtime headers

namespace flashio {

class DeviceAllocator;

// supports(): yes, or no with the reason that goes into a `skipped` record.
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {true, {}}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

// What `flashio list` prints: the method's capabilities in general.
struct MethodInfo {
  std::string name;
  std::string summary;     // one line: algorithm and paper reference
  std::string where;       // "gpu" or "cpu"
  std::vector<Pass> passes;
  std::vector<DType> dtypes;
  std::vector<int> head_dims;
  std::vector<std::string> masks;  // "none", "causal", "padding", "blocksparse"
  bool dropout = false;
  bool gqa = false;
  // Reads a paged K/V cache (Problem::kv_page: pages through a block table). False: a paged
  // point is skipped with the reason.
  bool paged_kv = false;
  // Reads packed variable-length input (Problem::packed(): [H, T, d] through cumulative
  // offsets, AttentionBuffers::cu_seqlens). False: a packed varlen point is skipped.
  bool varlen = false;
  // Reads a packed varlen decode (Problem::key_varlen(): Q, O, L dense [B, H, Nq, ...], K, V
  // [Hkv, T, d] through AttentionBuffers::cu_seqlens). False: such a point is skipped.
  bool varlen_decode = false;
  // Honours Problem::deterministic: its backward is bitwise reproducible (always, or in the
  // deterministic mode). False: a deterministic bwd/fwdbwd point is skipped.
  bool deterministic = false;
  // Tensor-core instruction paths its kernels have ("mma.sync", "wgmma"); a point that forces
  // another (Problem::mma) is skipped. Empty: no fused kernels (cuBLAS, CPU).
  std::vector<std::string> mma;
  // Its launches call cuBLAS, whose first call in a process loads the library (0.09-0.15 s of
  // host work): a sweep makes that start on a thread of its own (bench/measure/first_starts.h).
  bool cublas = false;
  std::string notes;       // limits not captured above
};

// Device pointers of one call, BHND layout. Gradients are null for a forward pass.
struct AttentionBuffers {
  const void* q = nullptr;       // [B, H, Nq, d]
  const void* k = nullptr;       // [B, Hkv, Nk, d]
  const void* v = nullptr;       // [B, Hkv, Nk, d]
  void* o = nullptr;             // [B, H, Nq, d]
  float* lse = nullptr;          // [B, H, Nq] natural-log log-sum-exp of the scaled scores
  const int* key_lengths = nullptr;  // [B] valid keys per sequence, or null (all valid)
  // A paged problem (Problem::kv_page > 0): k and v hold the pages, [pages, Hkv, P, d], and
  // block_table [B, ⌈Nk/P⌉] (int32) names the physical page of each logical one (KvPages).
  const int* block_table = nullptr;
  // A packed varlen problem (Problem::packed()): q, o [H, T, d], k, v [Hkv, T, d], lse [H, T],
  // and cu_seqlens [B + 1] (int32) the offsets of the sequences' first tokens (cu[B] = T). A packed
  // varlen decode (Problem::key_varlen()): only k, v are packed [Hkv, T, d], with cu_seqlens; q, o,
  // lse dense as above.
  const int* cu_seqlens = nullptr;
  const void* d_o = nullptr;     // [B, H, Nq, d]
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
};

// The tile sizes a kernel actually runs with: written into every record (the IO model
// reads them from there, never from a copy of the kernel's constants). The shape (Br, Bc,
// warps, stages) is TileShape's; the rest says how the kernel runs it.
struct Tiles : TileShape {
  int64_t smem_bytes = 0;
  int splits = 0;   // thread blocks sharing one (batch, head) along the kernel's outer tile loop (flash1); 0: not split by design
  // How the tiles are multiplied and stored: "mma.sync" (warp-level m16n8k16 from ldmatrix
  // fragments) or "wgmma" (Hopper warpgroup MMA reading shared memory through descriptors);
  // "padded" shared rows of (d + 8) elements or "swizzle128" (the 128-byte swizzle wgmma reads).
  // Empty in records written before these fields existed: mma.sync with padded rows.
  std::string mma;
  std::string smem_layout;
  // The materialized methods (standard, standard_fused): how the elementwise steps between the
  // GEMMs run — "separate" (one kernel each: masking, softmax, dropout; dropout backward,
  // softmax backward) or "fused" (mask + softmax + dropout in one row kernel per pass). Empty in
  // records written before it existed, whose `standard` was the fused code.
  std::string elementwise;
  // The backward kernels (tiles_bwd): how they add into the fp32 dQ accumulator — "pairs": two
  // adjacent columns per lane and instruction (red.global.add.v2.f32 where compiled for sm_90 or
  // later, two scalar atomics below; one 8-byte load and store for flash1's read-modify-write and
  // flash2's deterministic mode), the kernels since 9077f49; "scalar": one float per instruction,
  // the kernels before. Empty in records written before it existed (analysis reads those through
  // one compatibility function, analysis/analyze.cpp).
  std::string dq_adds;
  nlohmann::json to_json() const;
};

// A prepared call: workspace allocated, tile sizes fixed. forward()/backward() only launch.
class Plan {
 public:
  virtual ~Plan() = default;
  virtual Tiles tiles() const { return {}; }
  // The backward kernel's tiles, where it has its own (the IO model of bwd/fwdbwd needs them).
  virtual std::optional<Tiles> backward_tiles() const { return std::nullopt; }
  virtual bool writes_lse() const { return false; }
  virtual void forward(const AttentionBuffers& buf, cudaStream_t stream) = 0;
  virtual void backward(const AttentionBuffers& buf, cudaStream_t stream);  // throws if unsupported
};

// A method's launch side: fixes the tiles and allocates the workspace through `alloc`
// (plan_<name>() in the method's CUDA code).
using PlanFactory = std::unique_ptr<Plan> (*)(const Problem& p, Pass pass, const DeviceInfo& dev,
                                              DeviceAllocator& alloc);

class Method {
 public:
  virtual ~Method() = default;
  virtual MethodInfo info() const = 0;
  virtual Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const = 0;
  // Called only after supports() said yes. Throws where the method has no launch side (a build
  // without CUDA).
  std::unique_ptr<Plan> plan(const Problem& p, Pass pass, const DeviceInfo& dev, DeviceAllocator& alloc) const;
  bool can_launch() const { return planner_ != nullptr; }
  std::string name() const { return info().name; }

 private:
  friend class Registry;
  PlanFactory planner_ = nullptr;
};

// Support checks shared by the methods (dtype on this GPU, head dim in a list, ...).
Support check_common(const MethodInfo& info, const Problem& p, Pass pass, const DeviceInfo& dev);
// The fused kernels (flash1, flash2, blocksparse_flash) as this binary loads them: bf16 needs
// code generated for compute_80 or newer (a compute_75 PTX build traps on bf16 mma even on an
// H100, dev.kernel_ptx_arch).
Support check_fused_kernels(const Problem& p, const DeviceInfo& dev);

class Registry {
 public:
  // `planner` null: the method describes itself but cannot run (a build without CUDA).
  void add(std::unique_ptr<Method> m, PlanFactory planner);
  const Method* find(const std::string& name) const;
  std::vector<const Method*> all() const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<Method>> methods_;
};

// Every built-in method, registered explicitly: one flashio_add_method() line per method in the
// top-level CMakeLists.txt generates the list (bench/registry/builtin_registry.cpp.in), so a
// static library cannot drop one (tests/test_registry.cpp checks it against those lines).
const Registry& builtin_registry();

}  // namespace flashio
