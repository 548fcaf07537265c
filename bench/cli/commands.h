// The `flashio` command line: list, run, presets, merge, device. flashio_main() is the whole program, so
// tests can drive it with argument vectors and check exit codes and outputs.
// Exit codes: 0 success; 1 a runtime failure (no GPU for a GPU subcommand); 2 bad input; 3 run: a
// point's status is error, compare --baseline: a point slower than the threshold; 128 + signal
// when a run is stopped (130 SIGINT, 143 SIGTERM).
#pragma once
#include <string>
#include <vector>

namespace flashio {

int flashio_main(int argc, const char* const* argv);
int flashio_main(const std::vector<std::string>& args);  // args[0] is the program name

}  // namespace flashio
