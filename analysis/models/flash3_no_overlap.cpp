// flash3_no_overlap (an ablation of flash3, FlashAttention-3 Table 2): flash3's loads and stores,
// scheduled differently on the SM; the flash3 model under its name.
#include "analysis/models/flash3.h"

namespace flashio::analysis {

void register_flash3_no_overlap_model(ModelRegistry& r) { r.add(make_flash3_model("flash3_no_overlap")); }

}  // namespace flashio::analysis
