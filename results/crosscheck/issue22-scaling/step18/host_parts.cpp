// Issue 22 step 18 (step18-ab.txt, call 2): the host parts of the 64-point sweep's 16 problems timed. Built against the
// libraries of a build tree: g++ -O2 -std=c++17 -DFMT_HEADER_ONLY -I. host_parts.cpp build/bench/measure/libflashio_measure.a
// build/bench/sweep/libflashio_sweep.a build/bench/core/libflashio_core.a -lpthread; run: ./a.out THREADS (0: every core).
// How long the host parts of the 64-point sweep's problems take (make_forward, make_gradients).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include "bench/measure/host_side.h"
#include "bench/core/method.h"
#include <cstring>
using namespace flashio;
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  RunOptions opt;
  opt.host_threads = argc > 1 ? atoi(argv[1]) : 1;
  const int only = argc > 2 ? atoi(argv[2]) : -1;
  int idx = 0;
  double tf = 0, tg = 0;
  for (int n : {1024, 2048, 4096, 8192})
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        if (only >= 0 && idx++ != only) continue;
        Problem p;
        p.batch = 16384 / n; p.heads = 2048 / d; p.kv_heads = p.heads; p.seqlen_q = p.seqlen_k = n; p.head_dim = d;
        p.causal = causal; p.dtype = DType::F16; p.seed = 24301;
        double t0 = now();
        auto f = std::make_shared<const HostForward>(make_forward(p, opt));
        double t1 = now();
        HostGradients g = make_gradients(f, opt);
        double t2 = now();
        unsigned long long h = 0; for (double x : f->ref_out) { unsigned long long u; memcpy(&u, &x, 8); h = h * 1000003 ^ u; }
        for (double x : g.ref_dq) { unsigned long long u; memcpy(&u, &x, 8); h = h * 1000003 ^ u; }
        for (double x : g.ref_dk) { unsigned long long u; memcpy(&u, &x, 8); h = h * 1000003 ^ u; }
        for (double x : g.ref_dv) { unsigned long long u; memcpy(&u, &x, 8); h = h * 1000003 ^ u; }
        std::printf("n %5d d %3d causal %d rows %6zu fwd %.3f s (ref %.3f) grad %.3f s (ref %.3f) kvheads %zu hash %016llx\n", n, d, int(causal),
                    f->rows.size(), t1 - t0, f->reference_s, t2 - t1, g.reference_s, g.kv_heads.size(), h);
        tf += t1 - t0; tg += t2 - t1;
      }
  std::printf("total fwd %.3f grad %.3f\n", tf, tg);
}
namespace flashio { const Registry& builtin_registry() { static Registry r; return r; } }
