// Issue 22 step 18 (probe18.txt): where cuBLAS's first start spends its time (samples of the starting thread's stack, by
// library), whether it is CPU-bound, whether a cublasLt heuristic query alone makes it (no GPU work), and whether a captured
// (never launched) start disturbs another thread's work on the device. nvcc -O2 -std=c++17 -arch=sm_90 cublas_start_parts.cu
// -lcublas -lcublasLt -ldl; run with the mode as the argument.
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>
using clk = std::chrono::steady_clock;
static double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }
static double cpu_now() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }
constexpr int kDepth = 48, kMax = 4000;
static void* g_frames[kMax][kDepth];
static int g_depth[kMax];
static std::atomic<int> g_n{0};
static void on_sample(int) {
  int i = g_n.fetch_add(1);
  if (i < kMax) g_depth[i] = backtrace(g_frames[i], kDepth);
}
static std::string lib_of(void* p, std::string* sym) {
  Dl_info info{};
  if (!dladdr(p, &info) || !info.dli_fname) { *sym = "?"; return "?"; }
  std::string f = info.dli_fname; auto s = f.rfind('/'); if (s != std::string::npos) f = f.substr(s + 1);
  *sym = info.dli_sname ? info.dli_sname : "?";
  return f;
}
struct Sampler {  // samples thread `t` every 1 ms until stopped
  std::atomic<bool> stop{false}; std::thread th;
  explicit Sampler(pthread_t t) { th = std::thread([this, t] { while (!stop) { pthread_kill(t, SIGUSR1); usleep(1000); } }); }
  ~Sampler() { stop = true; th.join(); }
};
static void report(const char* tag) {
  int n = std::min(g_n.load(), kMax);
  std::map<std::string, int> top, deepest_lib;
  for (int i = 0; i < n; ++i) {
    std::string sym; std::string chain;
    // frames[0..1] are the handler; take the first frame outside the handler and libc's signal trampoline
    int k = 2; if (k >= g_depth[i]) continue;
    std::string l = lib_of(g_frames[i][k], &sym);
    top[l + " " + sym]++;
    // the outermost CUDA library frame below main: which API we are in
    std::string api = "-";
    for (int j = g_depth[i] - 1; j >= k; --j) { std::string s2; std::string l2 = lib_of(g_frames[i][j], &s2); if (l2.find("cublas") != std::string::npos || l2.find("cuda") != std::string::npos) { api = l2 + " " + s2; break; } }
    deepest_lib[api]++;
  }
  std::printf("%s: %d samples (1 ms)\n", tag, n);
  std::vector<std::pair<int, std::string>> v; for (auto& [k, c] : top) v.push_back({c, k}); std::sort(v.rbegin(), v.rend());
  for (size_t i = 0; i < v.size() && i < 14; ++i) std::printf("  top %4d %s\n", v[i].first, v[i].second.c_str());
  v.clear(); for (auto& [k, c] : deepest_lib) v.push_back({c, k}); std::sort(v.rbegin(), v.rend());
  for (size_t i = 0; i < v.size() && i < 8; ++i) std::printf("  api %4d %s\n", v[i].first, v[i].second.c_str());
  std::map<std::string, int> bylib;
  for (int i = 0; i < n; ++i) { if (g_depth[i] <= 2) continue; std::string s; bylib[lib_of(g_frames[i][2], &s)]++; }
  for (auto& [k, c] : bylib) std::printf("  lib %4d %s\n", c, k.c_str());
  g_n = 0;
}
static cublasStatus_t gemm16(cublasHandle_t h, half* a, half* b, half* c) {
  float one = 1.f, zero = 0.f; const int n = 16;
  return cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16F, n, n * n, b, CUDA_R_16F, n, n * n,
                                    &zero, c, CUDA_R_16F, n, n * n, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
__global__ void spin(float* x, int iters) {
  float a = x[threadIdx.x + blockIdx.x * blockDim.x];
  for (int i = 0; i < iters; ++i) a = a * 1.0000001f + 0.5f;
  x[threadIdx.x + blockIdx.x * blockDim.x] = a;
}

static double lt_heuristic(int n) {  // a cublasLt heuristic query for one n x n x n fp16 GEMM (fp32 compute); no GPU work
  auto t = clk::now();
  cublasLtHandle_t lt; cublasStatus_t s0 = cublasLtCreate(&lt);
  double create = since(t);
  cublasLtMatmulDesc_t op; cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t ta = CUBLAS_OP_T; cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatrixLayoutCreate(&a, CUDA_R_16F, n, n, n); cublasLtMatrixLayoutCreate(&b, CUDA_R_16F, n, n, n); cublasLtMatrixLayoutCreate(&c, CUDA_R_16F, n, n, n);
  cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
  size_t ws = 32 << 20; cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulHeuristicResult_t r[4]; int found = 0;
  double c0 = cpu_now();
  cublasStatus_t s1 = cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 4, r, &found);
  std::printf("  lt create %.4f s (status %d), heuristic %.4f s cpu %.4f (status %d, found %d)\n", create, int(s0), since(t) - create, cpu_now() - c0, int(s1), found);
  cublasLtMatmulPreferenceDestroy(pref); cublasLtMatrixLayoutDestroy(a); cublasLtMatrixLayoutDestroy(b); cublasLtMatrixLayoutDestroy(c);
  cublasLtMatmulDescDestroy(op); cublasLtDestroy(lt);
  return since(t);
}
static void first_gemms(half* x) {
  auto t = clk::now(); cublasHandle_t h; cublasCreate(&h); double cr = since(t); t = clk::now();
  gemm16(h, x, x + 256, x + 512); cudaDeviceSynchronize(); double g = since(t);
  half* big; cudaMalloc(&big, size_t(3) << 22); t = clk::now();
  float one = 1.f, zero = 0.f; const int n = 1024, d = 128;
  cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, d, &one, big, CUDA_R_16F, d, n * d, big + n * d, CUDA_R_16F, d, n * d,
                             &zero, big + 2 * n * d, CUDA_R_16F, n, n * n, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  cudaDeviceSynchronize();
  std::printf("  then cublasCreate %.4f s, first gemm16 %.4f s, a 1024x1024x128 gemm %.4f s\n", cr, g, since(t));
}
int main(int argc, char** argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 0;
  signal(SIGUSR1, on_sample);
  { void* f[4]; backtrace(f, 4); }  // load libgcc before any signal

  if (mode == 11 || mode == 12) {  // 11: the Lt heuristic query beside the context's creation; 12: after it, alone
    auto t = clk::now();
    std::thread a([&] { if (mode == 11) { cudaSetDevice(0); cudaFree(0); std::printf("  ctx thread: context %.4f s\n", since(t)); } });
    if (mode == 12) { a.join(); cudaSetDevice(0); cudaFree(0); std::printf("  context %.4f s\n", since(t)); }
    std::thread b([&] { double s = lt_heuristic(16); std::printf("  lt thread ended at %.4f s (took %.4f)\n", since(t), s); });
    if (a.joinable()) a.join(); b.join();
    cudaSetDevice(0); half* x; cudaMalloc(&x, 3 * 512); cudaMemset(x, 0, 3 * 512); cudaDeviceSynchronize();
    first_gemms(x); std::printf("  all %.4f s\n", since(t));
    return 0;
  }
  if (mode == 13) {  // nothing before: the plain start, for comparison
    cudaSetDevice(0); cudaFree(0); half* x; cudaMalloc(&x, 3 * 512); cudaMemset(x, 0, 3 * 512); cudaDeviceSynchronize();
    first_gemms(x); return 0;
  }
  auto t = clk::now();
  if (mode == 9) {  // the start in a thread beside the context's creation in another
    std::thread a([] { auto t = clk::now(); cudaSetDevice(0); cudaFree(0); std::printf("ctx thread: context %.4f s\n", since(t)); });
    std::thread b([] { auto t = clk::now(); cudaSetDevice(0); cublasHandle_t h; cublasCreate(&h);
      half* x; cudaMalloc(&x, 3 * 512); cudaMemset(x, 0, 3 * 512); double cr = since(t); auto t2 = clk::now();
      gemm16(h, x, x + 256, x + 512); cudaDeviceSynchronize(); std::printf("cublas thread: create %.4f s (from start), first gemm %.4f s\n", cr, since(t2)); });
    a.join(); b.join(); std::printf("both %.4f s\n", since(t)); return 0;
  }
  cudaSetDevice(0); cudaFree(0);
  std::printf("context %.4f s\n", since(t));
  half* x; cudaMalloc(&x, 3 * 512); cudaMemset(x, 0, 3 * 512); cudaDeviceSynchronize();
  if (mode == 0) {  // the start sampled
    pthread_t self = pthread_self();
    double c0 = cpu_now(); t = clk::now();
    cublasHandle_t h;
    { Sampler s(self); cublasCreate(&h); }
    std::printf("cublasCreate %.4f s, cpu %.4f s\n", since(t), cpu_now() - c0);
    report("cublasCreate");
    c0 = cpu_now(); t = clk::now();
    { Sampler s(self); gemm16(h, x, x + 256, x + 512); cudaDeviceSynchronize(); }
    std::printf("first gemm %.4f s, cpu %.4f s\n", since(t), cpu_now() - c0);
    report("first gemm");
    return 0;
  }
  if (mode == 8) {  // a captured start (thread-local mode) while this thread allocates, frees, syncs and times kernels
    float* y; cudaMalloc(&y, 132 * 4 * 256 * 4); cudaMemset(y, 0, 132 * 4 * 256 * 4);
    cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::atomic<bool> done{false}; double start_s = 0; std::string what;
    std::thread starter([&] {
      cudaSetDevice(0); auto t = clk::now();
      cublasHandle_t h; cublasCreate(&h); cudaStream_t cs; cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking); cublasSetStream(h, cs);
      cudaError_t b = cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal);
      cublasStatus_t st = gemm16(h, x, x + 256, x + 512);
      cudaGraph_t g = nullptr; cudaError_t e = cudaStreamEndCapture(cs, &g);
      start_s = since(t);
      what = std::string("begin ") + cudaGetErrorString(b) + ", gemm " + std::to_string(int(st)) + ", end " + cudaGetErrorString(e);
      if (g) cudaGraphDestroy(g); cublasDestroy(h); cudaStreamDestroy(cs); done = true; });
    int reps = 0, errors = 0; std::vector<float> ms; std::string first_error;
    while (!done || reps < 50) {
      void* p = nullptr; cudaError_t e1r = cudaMalloc(&p, 1 << 20); cudaError_t e2r = cudaFree(p);
      cudaEventRecord(e0, s); spin<<<132 * 4, 256, 0, s>>>(y, 2000); cudaEventRecord(e1, s);
      cudaError_t e3r = cudaEventSynchronize(e1); cudaError_t e4r = cudaStreamSynchronize(s);
      cudaError_t e5r = (reps % 5 == 0) ? cudaDeviceSynchronize() : cudaSuccess;
      float m = 0; cudaEventElapsedTime(&m, e0, e1); ms.push_back(m);
      for (cudaError_t er : {e1r, e2r, e3r, e4r, e5r}) if (er != cudaSuccess) { ++errors; if (first_error.empty()) first_error = cudaGetErrorString(er); }
      ++reps;
    }
    starter.join();
    cudaError_t last = cudaGetLastError();
    std::sort(ms.begin(), ms.end());
    std::printf("captured start %.4f s (%s); other thread: %d reps, %d errors (%s), last %s, kernel median %.4f ms max %.4f\n", start_s, what.c_str(), reps, errors,
                first_error.c_str(), cudaGetErrorString(last), ms[ms.size() / 2], ms.back());
    t = clk::now(); cublasHandle_t h; cublasCreate(&h); gemm16(h, x, x + 256, x + 512); cudaDeviceSynchronize();
    std::printf("after the captured start: create + first gemm %.4f s\n", since(t));
    return 0;
  }
  return 1;
}
