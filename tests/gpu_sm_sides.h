// The side probe's map of SMs to L2 sides (tests/gpu_sm_side_probe.cu prints one "SM A|B [µs]" line
// per SM, '#' lines are comments): the side of each of `sms` SMs, 0 for A, 1 for B, -1 for an SM the
// file does not place (or a file that cannot be read). Read by the L2 probe's mode h
// (tests/gpu_l2_probe.cu) and by tests/test_l2_sim.cpp. Plain C++.
#pragma once
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

inline std::vector<int> read_sm_sides(const std::string& path, int sms) {
  std::ifstream in(path);
  std::vector<int> side(size_t(sms), -1);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    int sm = -1;
    char c = 0;
    if (ls >> sm >> c && sm >= 0 && sm < sms) side[size_t(sm)] = c == 'A' ? 0 : 1;
  }
  return side;
}
