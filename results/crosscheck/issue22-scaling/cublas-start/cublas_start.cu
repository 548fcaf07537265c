// Issue 22 step 16 (results/crosscheck/issue22-scaling/cublas-start/probe.txt): what cuBLAS's first start costs, and whether making it on a second thread
// perturbs kernels timed meanwhile on the same GPU.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
using clk = std::chrono::steady_clock;
static double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }
__global__ void spin(float* x, int iters) {
  float a = x[threadIdx.x + blockIdx.x * blockDim.x];
  for (int i = 0; i < iters; ++i) a = a * 1.0000001f + 0.5f;
  x[threadIdx.x + blockIdx.x * blockDim.x] = a;
}
static void gemms(cublasHandle_t h, cudaStream_t s, half* a, half* b, half* c, int n, int d, const char* tag) {
  float one = 1.f, zero = 0.f;
  auto t = clk::now();
  cublasSetStream(h, s);
  cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, d, &one, a, CUDA_R_16F, d, n * d, b, CUDA_R_16F, d,
                             n * d, &zero, c, CUDA_R_16F, n, n * n, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  cudaStreamSynchronize(s);
  double g1 = since(t);
  t = clk::now();
  cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, d, n, n, &one, a, CUDA_R_16F, d, n * d, c, CUDA_R_16F, n,
                             n * n, &zero, b, CUDA_R_16F, d, n * d, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  cudaStreamSynchronize(s);
  std::printf("%s first gemm %.4f s, second shape %.4f s\n", tag, g1, since(t));
}
int main(int argc, char** argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 0;
  auto t = clk::now();
  cudaSetDevice(0);
  cudaFree(0);
  std::printf("context %.4f s\n", since(t));
  half *a, *b, *c;
  const int n = 1024, d = 128;
  cudaMalloc(&a, n * d * 2); cudaMalloc(&b, n * d * 2); cudaMalloc(&c, size_t(n) * n * 2);
  cudaMemset(a, 0, n * d * 2); cudaMemset(b, 0, n * d * 2);

  if (mode == 3 || mode == 4) {  // 3: the first GEMM captured into a graph (never launched), then a real one
    t = clk::now();
    cublasHandle_t h; cublasCreate(&h);
    cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasSetStream(h, s);
    std::printf("cublasCreate %.4f s\n", since(t));
    t = clk::now();
    float one = 1.f, zero = 0.f;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    cublasStatus_t st = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, mode == 3 ? n : 16, mode == 3 ? n : 16, mode == 3 ? d : 16, &one, a, CUDA_R_16F, d, n * d, b, CUDA_R_16F, d,
                             n * d, &zero, c, CUDA_R_16F, n, n * n, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaGraph_t gr; cudaError_t ce = cudaStreamEndCapture(s, &gr);
    std::printf("captured gemm %.4f s (status %d, capture %s)\n", since(t), int(st), cudaGetErrorString(ce));
    t = clk::now();
    cudaGraphDestroy(gr);
    cublasDestroy(h);
    std::printf("destroy %.4f s\n", since(t));
    t = clk::now();
    cublasHandle_t h2; cublasCreate(&h2);
    std::printf("second cublasCreate %.4f s\n", since(t));
    gemms(h2, s, a, b, c, n, d, "after capture");
    return 0;
  }
  if (mode == 0) {  // sequential: the parts of the start
    t = clk::now();
    cublasHandle_t h;
    cublasCreate(&h);
    std::printf("cublasCreate %.4f s\n", since(t));
    cudaStream_t s; cudaStreamCreate(&s);
    gemms(h, s, a, b, c, n, d, "handle 1");
    t = clk::now();
    cublasHandle_t h2; cublasCreate(&h2);
    std::printf("second cublasCreate %.4f s\n", since(t));
    gemms(h2, s, a, b, c, n, 64, "handle 2 d64");
    return 0;
  }
  // mode 1: time a kernel 400 times with events; mode 2: the same while a thread makes cuBLAS's start
  float* x; cudaMalloc(&x, 132 * 4 * 256 * 4); cudaMemset(x, 0, 132 * 4 * 256 * 4);
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ms; std::vector<double> at;
  std::atomic<int> phase{0};
  std::thread starter;
  const auto t0 = clk::now();
  double start_begin = -1, start_end = -1;
  for (int r = 0; r < 400; ++r) {
    if (mode == 2 && r == 100) starter = std::thread([&] {
      cudaSetDevice(0);
      start_begin = since(t0);
      cublasHandle_t h; cublasCreate(&h);
      cudaStream_t s2; cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
      gemms(h, s2, a, b, c, n, d, "starter");
      start_end = since(t0);
    });
    at.push_back(since(t0));
    cudaEventRecord(e0, s);
    spin<<<132 * 4, 256, 0, s>>>(x, 20000);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float m; cudaEventElapsedTime(&m, e0, e1); ms.push_back(m);
  }
  if (starter.joinable()) starter.join();
  std::printf("start from %.4f to %.4f s\n", start_begin, start_end);
  std::vector<float> in, out;
  for (size_t i = 0; i < ms.size(); ++i)
    (start_begin >= 0 && at[i] + ms[i] / 1e3 >= start_begin && at[i] <= start_end ? in : out).push_back(ms[i]);
  for (auto* v : {&in, &out}) {
    if (v->empty()) continue;
    std::sort(v->begin(), v->end());
    std::printf("%s: %zu reps, min %.4f median %.4f max %.4f ms\n", v == &in ? "during start" : "outside", v->size(),
                v->front(), (*v)[v->size() / 2], v->back());
  }
  return 0;
}
