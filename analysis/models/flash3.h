// The flash3 model (analysis/models/flash3.cpp) under a method's name: flash3 and its ablations
// (flash3_no_pingpong, flash3_no_overlap) run the same schedule of loads and stores.
#pragma once
#include <memory>
#include <string>

#include "analysis/models/model.h"

namespace flashio::analysis {

std::unique_ptr<IoModel> make_flash3_model(std::string method);

}  // namespace flashio::analysis
