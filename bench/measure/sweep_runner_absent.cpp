// Stands in for the sweep runner in a build without CUDA (FLASHIO_CUDA=OFF). The CLI reaches
// run_sweep() only after it found a GPU, which such a build never does (bench/cuda/cuda_absent.cpp).
#include <stdexcept>

#include "bench/measure/sweep_runner.h"

namespace flashio {

SweepOutcome run_sweep(const SweepJob&) {
  throw std::logic_error("flashio was built without CUDA (FLASHIO_CUDA=OFF): no sweep can run");
}

}  // namespace flashio
