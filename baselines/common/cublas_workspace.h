// The workspace each cuBLAS handle of the baselines gets (cublas_handle.h), as plain C++: the
// methods' supports() count it against the GPU's memory in every build.
#pragma once
#include <cstddef>

namespace flashio {

constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;  // cuBLAS's recommendation for Hopper

}  // namespace flashio
