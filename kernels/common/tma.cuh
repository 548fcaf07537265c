// Hopper (sm_90) asynchronous copies and their barriers, in inline PTX: the tensor memory
// accelerator (TMA: cp.async.bulk.tensor) that moves whole tiles between global and shared
// memory, the shared-memory barriers (mbarrier) whose transaction count it completes, named
// barriers between warpgroups, and register reallocation between warpgroups (setmaxnreg, sm_90a).
// Used by the warp-specialised flash3 kernels (kernels/flash3/).
//
// mbarrier protocol (PTX "Parallel Synchronization and Communication Instructions: mbarrier"):
// a barrier completes a phase when `count` arrivals have happened and its transaction count is
// back to zero; arrive.expect_tx raises the count by the bytes a TMA load will deliver, the load
// lowers it as they land. Phases alternate parity 0, 1, 0, …; a waiter names the parity of the
// phase it waits for. Right after init the "previous" phase (parity 1) counts as complete, so a
// producer's first wait on an empty slot, with parity 1, passes at once.
#pragma once
#include <cstdint>

#include "kernels/common/mma.cuh"

namespace flashio::kernels {

__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// Makes barrier initialisation visible to the async proxy (TMA) before first use.
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(smem_addr(bar)) : "memory");
}

// One arrival that also announces `bytes` of TMA transactions to come in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// Whether the phase of parity `parity` has completed, without waiting for it.
__device__ __forceinline__ bool mbar_test(uint64_t* bar, int parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred done;\n"
      "mbarrier.test_wait.parity.shared::cta.b64 done, [%1], %2;\n"
      "selp.u32 %0, 1, 0, done;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// TMA load of one box of a 3-D tensor map at coordinates (c0 innermost, c1, c2) into shared
// memory; completes `bar`'s transactions by the box's bytes (zero-filled outside the tensor).
__device__ __forceinline__ void tma_load_3d(void* smem, const void* tensor_map, uint64_t* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::
          "r"(smem_addr(smem)),
      "l"(tensor_map), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// TMA store of one box from shared memory; the parts of the box outside the tensor are not
// written. Completion through the bulk-group functions below.
__device__ __forceinline__ void tma_store_3d(const void* tensor_map, const void* smem, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(tensor_map),
               "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
// Bulk reduction: adds `bytes` (a multiple of 16, both addresses 16-byte aligned) of fp32 from
// shared memory element by element into global memory, in L2 — a store's path and completion
// (the bulk-group functions below), atomic per element against other adds.
__device__ __forceinline__ void bulk_reduce_add_f32(float* global, const void* smem, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(global),
               "r"(smem_addr(smem)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until this thread's committed stores, all but the newest kPending groups, have
// finished reading shared memory.
template <int kPending = 0>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}
// Waits until this thread's committed stores are complete (visible in global memory).
__device__ __forceinline__ void tma_store_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void prefetch_tensor_map(const void* tensor_map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tensor_map) : "memory");
}

// Named barriers (ids 1…15; 0 is __syncthreads): `threads` threads take part, a multiple of 32.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Register reallocation between warpgroups (sm_90a): every warp of the warpgroup executes it.
template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace flashio::kernels
