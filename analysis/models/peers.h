// The peers (scripts/peers_sdpa.py: PyTorch SDPA's back-ends sdpa_flash, sdpa_cudnn,
// sdpa_efficient, sdpa_math and FlexAttention, flex_attention) against the FlashAttention-2 IO
// model (models/flash2.cpp), with the tiles their own launches imply. A peer's record carries the
// kernels of its counter pass (counters.kernels[]: the demangled name, launches, the first launch's
// grid and block) and nothing else about its schedule; peers.cpp reads the tiles from those, per
// kernel family, or says in a sentence why no model applies. docs/io-model.md, "The peers", has
// the rules and what each was checked against.
#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/io_model.h"

namespace flashio::analysis {

// One kernel of a record as its counters list it (counters.kernels[]).
struct LaunchedKernel {
  std::string name;                               // demangled, template arguments kept
  int launches = 0;                               // in the record's call
  std::optional<std::array<int, 3>> grid, block;  // the first launch's (resources), where recorded
};
std::vector<LaunchedKernel> launched_kernels(const nlohmann::json& record);

// What a peer's launches say: its FA-2 tiles, how its kernels differ from flash2's in what they
// move, and where the tiles were read — or why no model applies (`why_not`, a sentence).
struct PeerTiles {
  std::optional<ModelTiles> fwd, bwd;
  Fa2Variant variant;
  std::string from;
  std::string why_not;
};
// `m`: the point's method (a peer's), pass and problem.
PeerTiles read_peer_tiles(const ModelPoint& m, const std::vector<LaunchedKernel>& kernels);

// Whether `kernel` is one of the peer `method`'s attention kernels (the rest of its record's
// kernels — PyTorch's copies around them — are reported beside the model).
bool peer_attention_kernel(const std::string& method, const std::string& kernel);

// The peers' method names, as scripts/peers_sdpa.py writes them.
std::vector<std::string> peer_methods();

}  // namespace flashio::analysis
