// The peers against FlashAttention-2's IO model (peers.h). One family per peer method: which of a
// record's kernels are its attention kernels, which of them plays which part of FA-2's schedule
// (forward; backward preprocess, main, convert), and where the tiles come from:
//
//   sdpa_flash      PyTorch's copy of FlashAttention-2 (pytorch_flash::). Br, Bc = kBlockM, kBlockN,
//                   the 2nd and 3rd template arguments of Flash_fwd_kernel_traits<kHeadDim, kBlockM,
//                   kBlockN, kNWarps, …> (forward) and Flash_bwd_kernel_traits<…> (backward) in the
//                   kernels' names; checked against the grids, (⌈Nq/kBlockM⌉, B, H) for
//                   flash_fwd_kernel and (⌈Nk/kBlockN⌉, B, H) for the seqk-parallel backward.
//                   flash_bwd_dot_do_o_kernel<Clear_dQaccum, …> zeroes the fp32 dQ accumulator
//                   with its stores when its first argument is true. The forward writes L always.
//   sdpa_cudnn      cuDNN's generated Hopper kernels, cudnn_generated_fort_native_sdpa_sm90_flash_
//                   {fprop,bprop}_wgmma_…_AxBxD_…: a persistent grid (one block per SM) says
//                   nothing, the name does. The streamed tile (forward Br, backward Bc) is A times
//                   the block's consumer warpgroups (threads / 128 − 1: one producer), the other B,
//                   D the head dim. A rule read off the names and the bytes, not documented by
//                   NVIDIA: on the H100 at N 2048, d 64 and 128, the forward and backward read
//                   K/V and Q/dO exactly 16 times (Br = Bc = 128 = 64 × 2) — the same bytes as
//                   PyTorch's FA-2 with its 128-row tiles. compute_dot_do_o's stores are D and the
//                   zeroed dQ accumulator (measured: 134 MB of its 158 MB at d 64). No L without
//                   a backward. Non-causal, MHA only (the rule was read there).
//   sdpa_efficient  xformers' cutlass kernels. fmha_cutlassF_<dtype>_<aligned>_<Br>x<Bc>_rf_sm<arch>
//                   (kQueriesPerBlock × kKeysPerBlock in the name), grid (⌈Nq/Br⌉, H, B). Its
//                   forward builds the Q·Kᵀ operand iterator over Q inside the key loop
//                   (kernel_forward.h): Q_i is read again for every K/V tile, a term of its own.
//                   No L without a backward. The `gmem` variant (O accumulated in global memory per
//                   K/V tile) and the backward (fmha_cutlassB_…: grid (key splits, H, B), one block
//                   walking a head's K/V tiles in turn, dQ in an fp32 workspace) are not FA-2's
//                   schedule: no model. Non-causal only (its causal loop cuts the last K/V tile at
//                   the diagonal, which the model does not).
//   flex_attention  Inductor's Triton template, triton_tem_fused_…flex_attention…: grid
//                   (⌈Nq/BLOCK_M⌉, B, H), so Br = the smallest power of two ≥ 16 consistent with
//                   grid x; BLOCK_N is not in the launch and a non-causal forward's bytes do not
//                   depend on it (the model takes Bc = Br). Its backward computes dK, dV in blocks
//                   over K/V tiles and dQ in blocks of its own over Q tiles (grid x = both counts,
//                   no dQ atomics): not FA-2's backward, no model; nor causal (its K/V tiles follow
//                   the block mask's 128-key blocks, not BLOCK_N).
//   sdpa_math       attention as separate kernels (batched GEMMs for S = QKᵀ and O = PV, softmax
//                   between them, S and P in memory): no tile, no model.
//
// Every peer's tile loads count 1× (swizzled or TMA tiles: smem_layout swizzle128), and a dQ add
// covers whole 32-byte sectors (a warp adds 32 consecutive floats of a row: measured 1.5 × the
// fp32 bytes in l2_red on the H100, the fabric factor, for PyTorch's FA-2 and cuDNN alike). Masks
// other than causal (key padding, block-sparse, packed varlen), dropout, paged K/V caches and
// deterministic backwards are not modelled for peers; the script skips most of them anyway.
#include "analysis/models/peers.h"

#include <fmt/format.h>

#include <regex>

#include "analysis/models/model.h"
#include "analysis/models/model_parts.h"

namespace flashio::analysis {

using namespace parts;

std::vector<LaunchedKernel> launched_kernels(const nlohmann::json& rec) {
  std::vector<LaunchedKernel> out;
  const nlohmann::json counters = rec.value("counters", nlohmann::json::object());
  for (const auto& k : counters.value("kernels", nlohmann::json::array())) {
    if (!k.is_object() || !k.contains("name") || !k["name"].is_string()) continue;
    LaunchedKernel l;
    l.name = k["name"].get<std::string>();
    l.launches = k.value("launches", 0);
    const nlohmann::json r = k.value("resources", nlohmann::json::object());
    auto dim3 = [&](const char* key) -> std::optional<std::array<int, 3>> {
      if (!r.is_object() || !r.contains(key) || !r[key].is_array() || r[key].size() != 3) return std::nullopt;
      std::array<int, 3> a{};
      for (size_t i = 0; i < 3; ++i) {
        if (!r[key][i].is_number_integer()) return std::nullopt;
        a[i] = r[key][i].get<int>();
      }
      return a;
    };
    l.grid = dim3("grid"), l.block = dim3("block");
    out.push_back(std::move(l));
  }
  return out;
}

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// The top-level arguments of the first `what<…>` in `name`: "…Flash_fwd_kernel_traits<64, 128,
// 128, 4, false, …>…" → {"64", "128", "128", "4", "false", …}.
std::optional<std::vector<std::string>> template_args(const std::string& name, const std::string& what) {
  const size_t at = name.find(what + "<");
  if (at == std::string::npos) return std::nullopt;
  std::vector<std::string> args;
  std::string cur;
  int depth = 0;
  for (size_t i = at + what.size(); i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' && depth++ == 0) continue;
    if (c == '>' && --depth == 0) {
      args.push_back(trim(cur));
      return args;
    }
    if (c == ',' && depth == 1) {
      args.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  return std::nullopt;
}

std::optional<int> to_int(const std::string& s) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(s);
}

// "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, …> >, false, …>" → "flash_fwd_kernel<…>".
std::string short_name(const std::string& name) {
  std::string base = name.substr(0, name.find('<'));
  const size_t colon = base.rfind("::");
  if (colon != std::string::npos) base = base.substr(colon + 2);
  return name.find('<') == std::string::npos ? base : base + "<…>";
}

std::string dims(const std::array<int, 3>& a) { return fmt::format("({}, {}, {})", a[0], a[1], a[2]); }

// Raised inside a family's reading with the sentence that says why no model applies.
struct NoModel {
  std::string why;
};
[[noreturn]] void no_model(std::string why) { throw NoModel{std::move(why)}; }

// The record's one kernel whose name `is` says is `what`, launched once (one pass is one call).
const LaunchedKernel& one(const std::vector<LaunchedKernel>& ks, bool (*is)(const std::string&), const char* what) {
  const LaunchedKernel* found = nullptr;
  for (const auto& k : ks) {
    if (!is(k.name)) continue;
    if (found) no_model(fmt::format("two {} kernels in the record ({}, {})", what, short_name(found->name), short_name(k.name)));
    found = &k;
  }
  if (!found) no_model(fmt::format("no {} kernel among the record's kernels", what));
  if (found->launches != 1)
    no_model(fmt::format("{} launched {} times in the record's call (FA-2's pass launches it once)",
                         short_name(found->name), found->launches));
  return *found;
}

// The kernel's recorded grid against the one its tile implies; returns how it was checked.
std::string check_grid(const LaunchedKernel& k, const std::array<int, 3>& want, const char* shape) {
  if (!k.grid) return "grid not recorded";
  if (*k.grid != want)
    no_model(fmt::format("{}'s grid {} is not {} = {}: the tiles read from its name do not fit its launch",
                         short_name(k.name), dims(*k.grid), shape, dims(want)));
  return fmt::format("grid {} = {}", dims(*k.grid), shape);
}

int warps_of(const LaunchedKernel& k) {
  return k.block ? std::max(1, (*k.block)[0] * (*k.block)[1] * (*k.block)[2] / 32) : 1;
}

ModelTiles peer_tiles(int br, int bc, int warps) {
  ModelTiles t;
  t.block_r = br, t.block_c = bc, t.warps = warps;
  t.smem_layout = SmemLayout::Swizzle128;  // swizzled (or TMA) shared tiles: every row delivered once
  return t;
}

void require_head_dim(int kernel_d, const LaunchedKernel& k, const Problem& p) {
  if (kernel_d != p.head_dim)
    no_model(fmt::format("{} is compiled for head dim {}, the problem's is {} (padded columns are not modelled)",
                         short_name(k.name), kernel_d, p.head_dim));
}

// What no peer model covers (the script skips most of it: scripts/peers_sdpa.py, unsupported_reason).
void require_plain_problem(const Problem& p) {
  if (p.sparse()) no_model("block-sparse masks are not modelled for peers");
  if (p.varlen()) no_model("variable-length batches are not modelled for peers");
  if (p.key_padded()) no_model("key padding is not modelled for peers");
  if (p.dropout > 0) no_model("dropout is not modelled for peers");
  if (p.paged()) no_model("paged K/V caches are not modelled for peers");
  if (p.deterministic) no_model("deterministic backwards are not modelled for peers");
}

// --- the families ------------------------------------------------------------------------------

bool torch_flash_any(const std::string& n) { return starts_with(n, "pytorch_flash::"); }
bool torch_flash_fwd(const std::string& n) { return starts_with(n, "pytorch_flash::flash_fwd_kernel<"); }
bool torch_flash_pre(const std::string& n) { return starts_with(n, "pytorch_flash::flash_bwd_dot_do_o_kernel<"); }
bool torch_flash_bwd(const std::string& n) {
  return starts_with(n, "pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<");
}
bool torch_flash_convert(const std::string& n) { return starts_with(n, "pytorch_flash::flash_bwd_convert_dq_kernel<"); }

// kHeadDim, kBlockM, kBlockN, kNWarps: the first four arguments of FA-2's kernel traits.
struct Fa2Traits {
  int d, br, bc, warps;
};
Fa2Traits fa2_traits(const LaunchedKernel& k, const char* traits) {
  const auto a = template_args(k.name, traits);
  std::optional<int> v[4];
  for (size_t i = 0; a && i < 4 && i < a->size(); ++i) v[i] = to_int((*a)[i]);
  for (const auto& x : v)
    if (!x || *x <= 0)
      no_model(fmt::format("{}: no {}<kHeadDim, kBlockM, kBlockN, kNWarps, …> in its name", short_name(k.name), traits));
  return {*v[0], *v[1], *v[2], *v[3]};
}

PeerTiles read_sdpa_flash(const ModelPoint& m, const std::vector<LaunchedKernel>& ks) {
  const Problem& p = m.problem;
  PeerTiles t;
  std::vector<std::string> from;
  for (const auto& k : ks)
    if (torch_flash_any(k.name) && !torch_flash_fwd(k.name) && !torch_flash_pre(k.name) && !torch_flash_bwd(k.name) &&
        !torch_flash_convert(k.name))
      no_model(fmt::format("{} is not one of the FA-2 kernels this model reads (flash_fwd_kernel; "
                           "flash_bwd_dot_do_o_kernel, flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel, "
                           "flash_bwd_convert_dq_kernel): a split-KV forward or another schedule",
                           short_name(k.name)));
  if (m.pass != Pass::Bwd) {
    const LaunchedKernel& k = one(ks, torch_flash_fwd, "FA-2 forward (pytorch_flash::flash_fwd_kernel)");
    const Fa2Traits a = fa2_traits(k, "Flash_fwd_kernel_traits");
    require_head_dim(a.d, k, p);
    const std::string grid = check_grid(k, {int(ceil_div(p.seqlen_q, a.br)), int(p.batch), int(p.heads)}, "(⌈Nq/Br⌉, B, H)");
    t.fwd = peer_tiles(a.br, a.bc, a.warps);
    from.push_back(fmt::format("forward {}×{} = kBlockM × kBlockN of Flash_fwd_kernel_traits<{}, {}, {}, {}, …> ({})",
                               a.br, a.bc, a.d, a.br, a.bc, a.warps, grid));
  }
  if (m.pass != Pass::Fwd) {
    if (p.kvh() != p.heads)
      no_model("GQA backward: PyTorch's FA-2 backward writes dK, dV per query head and sums them in other kernels");
    const LaunchedKernel& pre = one(ks, torch_flash_pre, "FA-2 backward preprocess (flash_bwd_dot_do_o_kernel)");
    const LaunchedKernel& k = one(ks, torch_flash_bwd, "FA-2 backward (flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel)");
    one(ks, torch_flash_convert, "FA-2 dQ convert (flash_bwd_convert_dq_kernel)");
    const Fa2Traits a = fa2_traits(k, "Flash_bwd_kernel_traits");
    require_head_dim(a.d, k, p);
    const std::string grid = check_grid(k, {int(ceil_div(p.nk(), a.bc)), int(p.batch), int(p.heads)}, "(⌈Nk/Bc⌉, B, H)");
    t.bwd = peer_tiles(a.br, a.bc, a.warps);
    const auto clear = template_args(pre.name, "flash_bwd_dot_do_o_kernel");
    t.variant.preprocess_zeroes_dq = clear && !clear->empty() && (*clear)[0] == "true";
    from.push_back(fmt::format("backward {}×{} = kBlockM × kBlockN of Flash_bwd_kernel_traits<{}, {}, {}, {}, …> ({}); "
                               "dot_do_o<Clear_dQaccum = {}>",
                               a.br, a.bc, a.d, a.br, a.bc, a.warps, grid, t.variant.preprocess_zeroes_dq));
  }
  t.variant.forward_lse_without_backward = true;  // FA-2 writes softmax_lse on every forward
  t.from = fmt::format("{}", fmt::join(from, "; "));
  return t;
}

bool cudnn_any(const std::string& n) {
  return starts_with(n, "cudnn_generated_fort_native_sdpa_") || starts_with(n, "cudnn::fusion::");
}
bool cudnn_fprop(const std::string& n) { return starts_with(n, "cudnn_generated_fort_native_sdpa_") && contains(n, "_fprop_"); }
bool cudnn_bprop(const std::string& n) { return starts_with(n, "cudnn_generated_fort_native_sdpa_") && contains(n, "_bprop_"); }
bool cudnn_pre(const std::string& n) { return starts_with(n, "cudnn::fusion::compute_dot_do_o"); }
bool cudnn_convert(const std::string& n) { return starts_with(n, "cudnn::fusion::convert_dq_to_16bits"); }

// A cuDNN sm90 wgmma kernel's A×B×D and its consumer warpgroups; see the file's comment.
struct CudnnTile {
  int a, b, d, consumers;
};
CudnnTile cudnn_tile(const LaunchedKernel& k) {
  static const std::regex re(R"(_sm(\d+)_flash_[bf]prop_wgmma_.*?_(\d+)x(\d+)x(\d+)_\d+x\d+x\d+_)");
  std::smatch mt;
  if (!std::regex_search(k.name, mt, re))
    no_model(fmt::format("{}: no tile rule for this cuDNN kernel (the rule is read off the sm90 wgmma "
                         "kernels' names: …_flash_fprop_wgmma_…_AxBxD_…)",
                         k.name));
  if (!k.block) no_model(fmt::format("{}: its block is not recorded (the consumer warpgroups give the tile)", k.name));
  const auto& b = *k.block;
  const int threads = b[0] * b[1] * b[2];
  if (threads % 128 != 0 || threads < 256)
    no_model(fmt::format("{}: a block of {} threads is not a producer warpgroup and consumer warpgroups", k.name, threads));
  return {std::stoi(mt[2]), std::stoi(mt[3]), std::stoi(mt[4]), threads / 128 - 1};
}

PeerTiles read_sdpa_cudnn(const ModelPoint& m, const std::vector<LaunchedKernel>& ks) {
  const Problem& p = m.problem;
  if (p.causal) no_model("causal: cuDNN's tile rule was read off non-causal kernels' bytes only");
  if (p.kvh() != p.heads) no_model("GQA: how cuDNN's kernels read a group's K/V is not modelled");
  for (const auto& k : ks)
    if (cudnn_any(k.name) && !cudnn_fprop(k.name) && !cudnn_bprop(k.name) && !cudnn_pre(k.name) && !cudnn_convert(k.name))
      no_model(fmt::format("{} is not one of the cuDNN kernels this model reads", short_name(k.name)));
  PeerTiles t;
  std::vector<std::string> from;
  if (m.pass != Pass::Bwd) {
    const LaunchedKernel& k = one(ks, cudnn_fprop, "cuDNN forward (…_flash_fprop_…)");
    const CudnnTile c = cudnn_tile(k);
    require_head_dim(c.d, k, p);
    t.fwd = peer_tiles(c.a * c.consumers, c.b, warps_of(k));
    from.push_back(fmt::format("forward {}×{} = {} × {} consumer warpgroups, {} of the name's {}x{}x{}", c.a * c.consumers,
                               c.b, c.a, c.consumers, c.b, c.a, c.b, c.d));
  }
  if (m.pass != Pass::Fwd) {
    one(ks, cudnn_pre, "cuDNN backward preprocess (cudnn::fusion::compute_dot_do_o…)");
    const LaunchedKernel& k = one(ks, cudnn_bprop, "cuDNN backward (…_flash_bprop_…)");
    one(ks, cudnn_convert, "cuDNN dQ convert (cudnn::fusion::convert_dq_to_16bits…)");
    const CudnnTile c = cudnn_tile(k);
    require_head_dim(c.d, k, p);
    t.bwd = peer_tiles(c.b, c.a * c.consumers, warps_of(k));
    from.push_back(fmt::format("backward {}×{}: Bc = {} × {} consumer warpgroups, Br = {} of the name's {}x{}x{}", c.b,
                               c.a * c.consumers, c.a, c.consumers, c.b, c.a, c.b, c.d));
    t.variant.preprocess_zeroes_dq = true;
  }
  t.variant.forward_lse_without_backward = false;
  t.from = fmt::format("{} (persistent grid; the rule of analysis/models/peers.cpp)", fmt::join(from, "; "));
  return t;
}

bool cutlass_any(const std::string& n) { return starts_with(n, "fmha_cutlass"); }
bool cutlass_fwd(const std::string& n) { return starts_with(n, "fmha_cutlassF_"); }
bool cutlass_bwd(const std::string& n) { return starts_with(n, "fmha_cutlassB_"); }

PeerTiles read_sdpa_efficient(const ModelPoint& m, const std::vector<LaunchedKernel>& ks) {
  const Problem& p = m.problem;
  if (m.pass != Pass::Fwd)
    for (const auto& k : ks)
      if (cutlass_bwd(k.name))
        no_model(fmt::format("{}: xformers' cutlass backward runs grid (key splits, H, B), one block walking a "
                             "head's K/V tiles in turn with dQ in an fp32 workspace — not FA-2's backward",
                             short_name(k.name)));
  if (p.causal) no_model("causal: the cutlass forward cuts its last K/V tile at the diagonal, which the model does not");
  for (const auto& k : ks)
    if (cutlass_any(k.name) && !cutlass_fwd(k.name))
      no_model(fmt::format("{} is not one of the cutlass kernels this model reads", short_name(k.name)));
  if (m.pass != Pass::Fwd) no_model("no cutlass backward kernel among the record's kernels");
  const LaunchedKernel& k = one(ks, cutlass_fwd, "cutlass forward (fmha_cutlassF_…)");
  static const std::regex re(R"(^fmha_cutlassF_[a-z0-9]+_[a-z]+_(\d+)x(\d+)_([a-z]+)_sm\d+)");
  std::smatch mt;
  if (!std::regex_search(k.name, mt, re)) no_model(fmt::format("{}: no <Br>x<Bc> in its name", k.name));
  const int br = std::stoi(mt[1]), bc = std::stoi(mt[2]);
  if (mt[3] != "rf")
    no_model(fmt::format("{}: the {} variant accumulates O in global memory per K/V tile, not in registers: not "
                         "FA-2's forward",
                         k.name, mt[3].str()));
  const std::string grid = check_grid(k, {int(ceil_div(p.seqlen_q, br)), int(p.heads), int(p.batch)}, "(⌈Nq/Br⌉, H, B)");
  PeerTiles t;
  t.fwd = peer_tiles(br, bc, warps_of(k));
  t.variant.q_read_per_kv_tile = true;
  t.variant.forward_lse_without_backward = false;
  t.from = fmt::format("forward {}×{} = kQueriesPerBlock × kKeysPerBlock of {} ({})", br, bc, k.name, grid);
  return t;
}

bool flex_any(const std::string& n) { return starts_with(n, "triton_") && contains(n, "flex_attention"); }
bool flex_fwd(const std::string& n) { return starts_with(n, "triton_tem_") && flex_any(n) && !contains(n, "backward"); }
bool flex_bwd(const std::string& n) { return flex_any(n) && contains(n, "backward"); }

PeerTiles read_flex(const ModelPoint& m, const std::vector<LaunchedKernel>& ks) {
  const Problem& p = m.problem;
  if (m.pass != Pass::Fwd) {
    const LaunchedKernel* bwd = nullptr;  // the template kernel, else any of the backward's
    for (const auto& k : ks)
      if (flex_bwd(k.name) && (!bwd || (starts_with(k.name, "triton_tem_") && !starts_with(bwd->name, "triton_tem_"))))
        bwd = &k;
    if (!bwd) no_model("no FlexAttention backward kernel among the record's kernels");
    no_model(fmt::format("{}: FlexAttention's backward computes dK, dV in blocks over K/V tiles and dQ in blocks of "
                         "its own over Q tiles (no dQ atomics) — not FA-2's backward",
                         bwd->name));
  }
  if (p.causal) no_model("causal: FlexAttention reads K/V by its block mask's 128-key blocks, not by a tile the launch shows");
  for (const auto& k : ks)
    if (flex_any(k.name) && !flex_fwd(k.name))
      no_model(fmt::format("{} is not the FlexAttention forward template", k.name));
  const LaunchedKernel& k = one(ks, flex_fwd, "FlexAttention forward (triton_tem_fused_…flex_attention…)");
  if (!k.grid) no_model(fmt::format("{}: its grid is not recorded (BLOCK_M comes from it)", k.name));
  const auto& g = *k.grid;
  if (g[1] != p.batch || g[2] != p.heads)
    no_model(fmt::format("{}'s grid {} is not (⌈Nq/BLOCK_M⌉, B, H) with B = {}, H = {}", k.name, dims(g), p.batch,
                         p.heads));
  int br = 0;
  for (int cand = 16; cand <= 1024 && br == 0; cand *= 2)
    if (ceil_div(p.seqlen_q, cand) == g[0]) br = cand;
  if (br == 0)
    no_model(fmt::format("{}'s grid x {} is ⌈Nq/BLOCK_M⌉ for no power of two BLOCK_M (Nq = {})", k.name, g[0],
                         p.seqlen_q));
  PeerTiles t;
  t.fwd = peer_tiles(br, br, warps_of(k));
  t.variant.forward_lse_without_backward = false;
  t.from = fmt::format("forward Br = BLOCK_M = {}, the smallest power of two with ⌈{}/BLOCK_M⌉ = grid x of {} {} "
                       "(Bc = BLOCK_N is not in the launch and moves no byte of a non-causal forward: taken as Br)",
                       br, p.seqlen_q, k.name, dims(g));
  return t;
}

PeerTiles read_sdpa_math(const ModelPoint&, const std::vector<LaunchedKernel>&) {
  no_model("sdpa_math runs attention as separate kernels (batched GEMMs for S = QKᵀ and O = PV, a softmax between "
           "them, S and P in memory): no tile to read and no FA-2 schedule (compare it with `standard`)");
}

bool any_kernel(const std::string&) { return true; }

struct Family {
  const char* method;
  bool (*attention)(const std::string& kernel);  // the family's attention kernels
  PeerTiles (*read)(const ModelPoint&, const std::vector<LaunchedKernel>&);
};
// In scripts/peers_sdpa.py's order of back-ends (BACKENDS, then FLEX).
const Family kFamilies[] = {{"sdpa_flash", torch_flash_any, read_sdpa_flash},
                            {"sdpa_cudnn", cudnn_any, read_sdpa_cudnn},
                            {"sdpa_efficient", cutlass_any, read_sdpa_efficient},
                            {"sdpa_math", any_kernel, read_sdpa_math},
                            {"flex_attention", flex_any, read_flex}};

const Family* family_of(const std::string& method) {
  for (const auto& f : kFamilies)
    if (method == f.method) return &f;
  return nullptr;
}

Traffic without_term(const Traffic& t, const std::string& name) {
  Traffic out;
  for (const auto& x : t.terms)
    if (x.name != name) out.add(x.name, x.read, x.write, x.red, x.atom);
  return out;
}

// Q_i read again for every K/V tile after the first (cutlass's forward): the Q deliveries of each
// tile times its further visible K/V tiles.
int64_t q_reread_bytes(const Problem& p, const ModelTiles& t) {
  const int64_t nq = p.seqlen_q, nk = p.nk(), br = t.block_r, bc = t.block_c;
  int64_t rows = 0;
  for (int64_t i = 0; i < ceil_div(nq, br); ++i) {
    const int64_t n_end = p.causal ? std::min(nk, (i + 1) * br) : nk;
    rows += std::max<int64_t>(0, ceil_div(n_end, bc) - 1) * smem_row_deliveries(std::min(br, nq - i * br), t.smem_layout);
  }
  return p.batch * p.heads * rows * p.head_dim * bytes_of(p.dtype);
}

class PeerModel final : public IoModel {
 public:
  explicit PeerModel(const Family& f) : f_(f) {}
  std::string method() const override { return f_.method; }
  bool exact() const override { return true; }

  Reading read_record(const nlohmann::json& rec, const nlohmann::json&, ModelPoint& m) const override {
    const auto kernels = launched_kernels(rec);
    if (kernels.empty()) {
      const nlohmann::json c = rec.value("counters", nlohmann::json::object());
      return {fmt::format("no model: the record lists no kernels (counters {}): a peer's tiles are read from its "
                          "launches (scripts/peers_sdpa.py --counters)",
                          c.value("status", std::string("absent"))),
              ""};
    }
    const PeerTiles t = read_peer_tiles(m, kernels);
    if (!t.why_not.empty()) return {"no model: " + t.why_not, ""};
    m.fwd_tiles = t.fwd, m.bwd_tiles = t.bwd;
    m.fa2 = t.variant;
    return {"", t.from};
  }
  bool outside_model(const std::string& kernel) const override { return !f_.attention(kernel); }
  std::string dram_not_modelled() const override {
    return "a peer's DRAM bytes are measured, not modelled (its block order, persistence and occupancy are its own)";
  }
  bool tiles_from_launches() const override { return true; }

  Traffic sm_l2(const ModelPoint& m) const override {
    const Problem& p = m.problem;
    Traffic out;
    if (m.pass != Pass::Bwd) {
      const ModelTiles t = need_tiles(m.fwd_tiles, m, "forward");
      Traffic f = flash2_fwd_traffic(p, t, m.mask);
      if (m.pass == Pass::Fwd && !m.fa2.forward_lse_without_backward) f = without_term(f, kLseTerm);
      if (m.fa2.q_read_per_kv_tile) f.add("Q tiles again, per further K/V tile", q_reread_bytes(p, t), 0);
      out += f;
    }
    if (m.pass != Pass::Fwd) {
      Traffic b = flash2_bwd_traffic(p, need_tiles(m.bwd_tiles, m, "backward"), m.bwd_mask, DqWidth{2, 2});
      if (m.fa2.preprocess_zeroes_dq)
        b.add("preprocess: dQ accumulator zeroed", 0, p.batch * p.heads * p.seqlen_q * p.head_dim * kF32);
      out += b;
    }
    return out;
  }
  Traffic compulsory_dram(const ModelPoint& m) const override {
    Traffic out;
    if (m.pass != Pass::Bwd) add_forward_compulsory(m.problem, out);
    if (m.pass != Pass::Fwd) add_fused_backward_compulsory(m.problem, /*d_in_main_kernel=*/false, out);
    return out;
  }
  int64_t dram_beyond_compulsory(const ModelPoint&, const DramContext&, DramPrediction&) const override {
    throw std::invalid_argument(dram_not_modelled());
  }
  std::string asymptotic_formula(const ModelPoint& m) const override {
    if (m.pass == Pass::Fwd) return "N·d + N²·d/Br  (FA-2: K,V read Tr times)";
    return IoModel::asymptotic_formula(m);
  }

 private:
  const Family& f_;
};

}  // namespace

PeerTiles read_peer_tiles(const ModelPoint& m, const std::vector<LaunchedKernel>& kernels) {
  PeerTiles t;
  const Family* f = family_of(m.method);
  if (!f) {
    t.why_not = m.method + " is not a peer";
    return t;
  }
  try {
    require_plain_problem(m.problem);
    t = f->read(m, kernels);
  } catch (const NoModel& e) {
    t = PeerTiles{};
    t.why_not = e.why;
  }
  return t;
}

bool peer_attention_kernel(const std::string& method, const std::string& kernel) {
  const Family* f = family_of(method);
  return f && f->attention(kernel);
}

std::vector<std::string> peer_methods() {
  std::vector<std::string> out;
  for (const auto& f : kFamilies) out.push_back(f.method);
  return out;
}

void register_peer_models(ModelRegistry& r) {
  for (const auto& f : kFamilies) r.add(std::make_unique<PeerModel>(f));
}

}  // namespace flashio::analysis
