// The block-sparse kernels' one table: the head dims compiled with kSparse (compile time is
// bounded: two head dims, fp16 and bf16), each running flash2's first forward tile
// (kernels/flash2/flash2_fwd_configs.h) and flash2's first backward tile. Plain C++.
#pragma once
#include "kernels/flash2/flash2_fwd_configs.h"

// Read by CMake's instantiations (kernels/blocksparse/CMakeLists.txt reads this line), the
// dispatch and the method's info().
#define BLOCKSPARSE_HEAD_DIMS(X) X(64) X(128)
