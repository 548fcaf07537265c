// The input generator (bench/core/inputs.h) run on the GPU: the same input_word, so the same
// bits as the host's fill_normal, without generating and copying the tensor on the host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "bench/core/inputs.h"

typedef struct CUstream_st* cudaStream_t;

namespace flashio {

// Elements [0, count) of `tensor` into the device array `out`, enqueued on `stream`.
void generate_inputs_on_device(uint16_t* out, size_t count, DType dtype, uint64_t seed, InputTensor tensor,
                               cudaStream_t stream);

}  // namespace flashio
