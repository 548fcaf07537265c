// A CUDA program for `flashio profile`'s GPU tests (tests/test_gpu_profile.cpp): kernels whose
// traffic and names are known, NVTX ranges around them, and an exit of the caller's choosing.
//
//   flashio_profile_target --bytes N [--warm] [--graph] [--exit CODE] [--abort]
//
// In order: a fill kernel writes src (N bytes); a read-only pass over 2 × L2 evicts it cleanly
// (no dirty lines left to be written during the copy); inside the NVTX range "target/copy" the
// calibration copy reads N bytes and writes N bytes (DRAM: N each way, less what is still dirty
// in L2 when it ends, at most the L2 size); with --warm, inside "target/warm" a fill kernel writes
// the 1 MiB the next kernel reads (left dirty in L2 unless something cleans it); with --graph, a
// CUDA graph of one scale kernel captured (global capture mode: any synchronisation meanwhile
// breaks it) and launched twice; inside "target/scale" a kernel in an anonymous namespace scales 1 MiB. Then it exits with CODE
// (default 0), or with --abort raises SIGABRT (no exit handlers run: what the injection decoded
// before is all there is).
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/cuda/cuda_check.h"
#include "tests/gpu_calibration_kernels.h"

namespace {

template <typename T>
__global__ void scale_kernel(T* x, T factor, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] *= factor;
}

__global__ void fill_kernel(unsigned* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = unsigned(i) * 2654435761u;
}

int usage() {
  std::fprintf(stderr, "usage: flashio_profile_target --bytes N [--warm] [--graph] [--exit CODE] [--abort]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 0;
  int exit_code = 0;
  bool abort_at_end = false, warm = false, graph = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 10) & ~size_t(0xFFFF);
    } else if (a == "--exit" && i + 1 < argc) {
      exit_code = std::atoi(argv[++i]);
    } else if (a == "--abort") {
      abort_at_end = true;
    } else if (a == "--warm") {
      warm = true;
    } else if (a == "--graph") {
      graph = true;
    } else {
      return usage();
    }
  }
  if (bytes == 0) return usage();
  using flashio::testing_util::launch_calibration_copy;
  using flashio::testing_util::launch_calibration_reread;
  // CUDA first: the injection library is loaded when CUDA initialises, and NVTX ranges pushed
  // before it are not seen.
  FLASHIO_CUDA_CHECK(cudaFree(nullptr));
  int device = 0, l2 = 0;
  FLASHIO_CUDA_CHECK(cudaGetDevice(&device));
  FLASHIO_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const size_t evict = 2 * size_t(l2) & ~size_t(0xFFFF);
  void *src = nullptr, *dst = nullptr, *scratch = nullptr, *sink = nullptr;
  float* small = nullptr;
  const size_t small_n = (1 << 20) / sizeof(float);
  FLASHIO_CUDA_CHECK(cudaMalloc(&src, bytes));
  FLASHIO_CUDA_CHECK(cudaMalloc(&dst, bytes));
  FLASHIO_CUDA_CHECK(cudaMalloc(&scratch, evict));
  FLASHIO_CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  FLASHIO_CUDA_CHECK(cudaMalloc(&small, small_n * sizeof(float)));

  fill_kernel<<<1024, 256>>>(static_cast<unsigned*>(src), bytes / sizeof(unsigned));
  launch_calibration_reread(scratch, evict, 1, static_cast<unsigned*>(sink), nullptr);
  nvtxRangePushA("target/copy");
  launch_calibration_copy(src, dst, bytes, nullptr);
  nvtxRangePop();
  if (warm) {
    nvtxRangePushA("target/warm");
    fill_kernel<<<256, 256>>>(reinterpret_cast<unsigned*>(small), small_n);
    nvtxRangePop();
  }
  if (graph) {
    cudaStream_t stream = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    FLASHIO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    FLASHIO_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    scale_kernel<float><<<256, 256, 0, stream>>>(small, 0.5f, small_n);
    FLASHIO_CUDA_CHECK(cudaStreamEndCapture(stream, &g));
    FLASHIO_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    FLASHIO_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FLASHIO_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
    cudaGraphExecDestroy(exec), cudaGraphDestroy(g), cudaStreamDestroy(stream);
  }
  nvtxRangePushA("target/scale");
  scale_kernel<float><<<256, 256>>>(small, 2.0f, small_n);
  nvtxRangePop();
  FLASHIO_CUDA_CHECK(cudaGetLastError());
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
  std::printf("flashio_profile_target: copied %zu bytes\n", bytes);
  std::fflush(stdout);
  if (abort_at_end) std::raise(SIGABRT);
  cudaFree(src), cudaFree(dst), cudaFree(scratch), cudaFree(sink), cudaFree(small);
  return exit_code;
}
