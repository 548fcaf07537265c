// libFuzzer: the command line. The input is split at NUL bytes into arguments after "flashio";
// arguments naming another folder ('/', "..") are dropped, so the files a command may write stay
// in the fuzzer's working folder (run it in a scratch folder: scripts/fuzz.sh does). Output is
// discarded. An exit code outside 0-3 is a finding.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/cli/commands.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"flashio"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += char(data[i]);
    }
  }
  args.push_back(cur);
  for (const auto& a : args)
    if (a.find('/') != std::string::npos || a.find("..") != std::string::npos) return 0;
  static const int devnull = ::open("/dev/null", O_WRONLY);
  std::fflush(stdout);
  std::fflush(stderr);
  const int out = ::dup(1), err = ::dup(2);
  ::dup2(devnull, 1);
  ::dup2(devnull, 2);
  const int rc = flashio::flashio_main(args);
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(out, 1);
  ::dup2(err, 2);
  ::close(out);
  ::close(err);
  if (rc < 0 || rc > 3) std::abort();
  return 0;
}
