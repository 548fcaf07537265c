// Bad input on the command line: thrown while reading options, sweep files or input files;
// flashio_main prints its message as one line and exits 2, before any output is written.
#pragma once
#include <stdexcept>

namespace flashio {

struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace flashio
