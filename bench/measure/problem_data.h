// What consecutive points of one problem share on the GPU: its inputs, generated there with the
// host's generator (bench/cuda/device_inputs.h). The host half (the checked rows, the heads the
// float64 reference reads, the reference values) is bench/measure/host_side.h; verify_inputs
// compares, bit for bit, every head the host made with the GPU's, so the reference provably reads
// what the methods read.
#pragma once
#include <vector>

#include "bench/cuda/device_memory.h"
#include "bench/measure/host_side.h"

namespace flashio {

struct DeviceSide {
  // K, V: contiguous [B, Hkv, Nk, d], or a paged problem's pages [pages, Hkv, P, d] with its
  // block_table [B, ⌈Nk/P⌉].
  // A packed varlen problem: q [H, T, d], k, v [Hkv, T, d], and cu_seqlens [B + 1] (int32); a
  // varlen decode's q dense, and paged (Problem::paged_varlen) its k, v the pages of KvPages.
  DeviceBuffer q, k, v, d_o, key_lengths, block_table, cu_seqlens;
  DeviceBuffer rows;  // the checked rows' indices as stored (check.h stored_row), for launch_gather_rows
  std::vector<char> q_checked, k_checked, v_checked, d_o_checked;  // heads verify_inputs compared
};

// Q, K, V generated on the GPU, key lengths and the checked rows copied.
DeviceSide make_device_side(const HostForward& h, DeviceAllocator& alloc, cudaStream_t stream);
// dO generated on the GPU (once).
void add_device_gradients(const Problem& p, DeviceSide& d, DeviceAllocator& alloc, cudaStream_t stream);
// Throws when a head the host made differs from the GPU's (the generators disagree). Each head is
// compared once, whichever part holds it.
void verify_inputs(const HostForward& h, DeviceSide& d);
void verify_inputs(const HostGradients& h, DeviceSide& d);

}  // namespace flashio
