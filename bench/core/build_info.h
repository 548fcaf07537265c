// What the binary was built from: written into every result file.
#pragma once
#include <string>

namespace flashio {

struct BuildInfo {
  std::string git_revision;  // full SHA of HEAD, or "unknown"
  bool git_dirty;            // tracked files differed from HEAD at build time
  std::string cuda_architectures;
  std::string build_type;
  std::string cxx_compiler;
  std::string cuda_compiler;
};

const BuildInfo& build_info();  // defined in the generated build_info.cpp

}  // namespace flashio
