// The one dispatch point of flash_decode: run-time (element type, head dim) → template
// instantiation (two switches deep).
#include <stdexcept>
#include <string>

#include "kernels/flash_decode/flash_decode_launch.cuh"

namespace flashio::kernels {

#define FLASH_DECODE_DECLARE(D)                                                      \
  extern template void run_flash_decode<half, D>(const DecodeParams&, cudaStream_t); \
  extern template void run_flash_decode<__nv_bfloat16, D>(const DecodeParams&, cudaStream_t);
FLASH_DECODE_HEAD_DIMS(FLASH_DECODE_DECLARE)

template <typename T>
static void dispatch_head_dim(const DecodeParams& p, cudaStream_t stream) {
  switch (p.head_dim) {
#define FLASH_DECODE_CASE(D)           \
  case D:                              \
    run_flash_decode<T, D>(p, stream); \
    return;
    FLASH_DECODE_HEAD_DIMS(FLASH_DECODE_CASE)
    default:
      throw std::invalid_argument("flash_decode: head dim " + std::to_string(p.head_dim) + " not compiled");
  }
}

void flash_decode_fwd(const DecodeParams& p, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_head_dim<__nv_bfloat16>(p, stream);
  } else {
    dispatch_head_dim<half>(p, stream);
  }
}

}  // namespace flashio::kernels
