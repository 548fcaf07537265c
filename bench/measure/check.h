// Correctness check of a method's outputs against the float64 reference.
// Tolerance per element: |out - ref| <= atol + rtol·|ref|, where atol is a fraction of
// the RMS of the reference tensor over the checked elements (attention outputs shrink like
// 1/sqrt(N), so a fixed atol would pass garbage at long sequences). NaN never passes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bench/core/reference.h"
#include "bench/core/record.h"

namespace flashio {

struct Tolerance {
  double atol_rms;  // atol as a fraction of the reference RMS
  double rtol;
};
Tolerance tolerance_for(DType t);           // O
Tolerance gradient_tolerance_for(DType t);  // dQ, dK, dV

// Rows to check: all of them when the reference is cheap enough, else a sample that
// always includes the first and last rows, tile-boundary rows, and random rows of a few
// (batch, head) pairs.
std::vector<RowId> rows_to_check(const Problem& p, double budget_macs = 4e9);

// Root mean square of the finite values (only the non-zero ones when asked: masked keys'
// gradients are exactly zero and would shrink it).
double rms(const std::vector<double>& v, bool nonzero_only = false);

// One tensor's comparison; `atol` absolute when `atol_is_absolute`, else atol_rms·RMS(ref). On up
// to kCompareThreads of the host's threads, pieces of kComparePiece elements each: a point waits for
// its two checks, which on an H200 host took a third of a sweep's wall time one element at a time
// (issue 22, docs/sweep-time.md step 15).
inline constexpr int kCompareThreads = 8;
inline constexpr size_t kComparePiece = size_t(1) << 15;
TensorCheck compare_tensor(const std::string& name, const std::vector<double>& got, const std::vector<double>& ref,
                           double atol, double rtol, bool atol_is_absolute = false);

// The same from 16-bit words of type `dtype` (as a GPU tensor's rows are copied back), each read as
// the value compare_tensor would be given: the same figures.
TensorCheck compare_words(const std::string& name, const uint16_t* got, DType dtype, const std::vector<double>& ref,
                          double atol, double rtol, bool atol_is_absolute = false);

// The gradients' absolute tolerances: atol_rms of gradient_tolerance_for times each reference's RMS,
// floored at a tenth of the largest RMS over non-zero elements (dS = P∘(dP − D) cancels where a row
// sees few keys, exactly with one: dQ = dK = 0, yet D comes from the O rounded to the element type,
// so those rows carry an error of the rounding of O times |dO·V|, not of their own tiny size; keys
// a mask hides have exactly zero gradients and would shrink it). Once per problem: a pass over
// each reference.
struct GradientAtols {
  double dq = 0, dk = 0, dv = 0;
};
GradientAtols gradient_atols(DType dtype, const std::vector<double>& ref_dq, const std::vector<double>& ref_dk,
                             const std::vector<double>& ref_dv);

// Adds a tensor's result to `c`, updating the overall figures (worst over tensors).
void add_tensor(CheckResult& c, const TensorCheck& t);

// Compares O rows (and LSE, when given) of a method with the reference values for `rows`: the
// rows gathered from the whole tensor, then compare_row_words_with_reference.
CheckResult compare_with_reference(const Problem& p, const std::vector<RowId>& rows,
                                   const std::vector<double>& ref_out, const std::vector<double>& ref_lse,
                                   const uint16_t* out,                    // O of the method, BHND (the rows read)
                                   const std::vector<float>* lse);  // full LSE as stored (packed varlen: [H, T]) or null

// O's absolute tolerance over the checked rows: atol_rms of tolerance_for times the RMS of the
// reference (a pass over it: the runner makes it once per problem).
double output_atol(DType dtype, const std::vector<double>& ref_out);

// The same comparison from the checked rows alone: O's as 16-bit words (rows × d, in the order of
// the rows, as the runner gathers them on the GPU and copies them back), O's atol from
// output_atol, and their LSE (or null).
CheckResult compare_row_words_with_reference(const Problem& p, size_t rows, const std::vector<double>& ref_out,
                                             double out_atol, const std::vector<double>& ref_lse,
                                             const uint16_t* out_words, const std::vector<double>* lse_rows);

// Index of query row r in the rows of O and L as stored: (b·H + h)·Nq + i, or for a packed
// varlen problem h·T + cu[b] + i (cu = cu_seqlens(p), unused otherwise).
int64_t stored_row(const Problem& p, const std::vector<int64_t>& cu, const RowId& r);

}  // namespace flashio
