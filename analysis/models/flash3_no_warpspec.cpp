// flash3_no_warpspec (an ablation of flash3, FlashAttention-3 Table 2): flash3's loads and stores,
// issued by a consumer thread instead of a producer warpgroup; the flash3 model under its name.
#include "analysis/models/flash3.h"

namespace flashio::analysis {

void register_flash3_no_warpspec_model(ModelRegistry& r) { r.add(make_flash3_model("flash3_no_warpspec")); }

}  // namespace flashio::analysis
