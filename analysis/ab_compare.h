// `flashio compare --baseline A.json B.json..`: A/B comparison of runs, for CI regression gates.
// Each point of B matched with A (tables.h, matched_key) gets the ratio of median times B / A and
// a confidence interval for it from a bootstrap of both files' repetition times
// (`time.samples_s`); a point is a regression when B is slower than A by more than the
// threshold and the interval excludes 1 (the slowdown is not noise). Points without samples get
// the ratio and no interval, and are not judged. Points only one side has, or that did not run
// on one side, are listed.
#pragma once
#include <cstdint>
#include <vector>

#include "analysis/tables.h"

namespace flashio::analysis {

struct AbOptions {
  double threshold = 0.05;   // a slowdown above 1 + threshold can fail
  double confidence = 0.95;  // of the bootstrap interval
  int resamples = 2000;      // bootstrap resamples per point
  uint64_t seed = 0x5eed;    // the bootstrap's generator: the same files give the same intervals
};

// A bootstrap percentile interval of median(b) / median(a): each resample draws a and b with
// replacement. Needs at least two samples on each side.
struct RatioInterval {
  double ratio = 0, lo = 0, hi = 0;
};
RatioInterval bootstrap_median_ratio(const std::vector<double>& a, const std::vector<double>& b, const AbOptions& opt);

struct AbReport {
  std::vector<Table> tables;  // the comparison per file, then the unmatched points
  int regressions = 0;        // matched points slower than the threshold with significance
  int judged = 0;             // matched points with samples on both sides
  int unjudged = 0;           // matched points without samples on one side
};
// docs[0] is the baseline, every other file is compared with it. Throws std::invalid_argument
// for fewer than two files.
AbReport ab_compare(const Documents& docs, const AbOptions& opt);

}  // namespace flashio::analysis
