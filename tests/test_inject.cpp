// libflashio_inject.so without a GPU: what CUDA's driver would do at cuInit (dlopen the library,
// call InitializeInjection) done by hand in a child process, then the log read back — the start
// line, the end line written at exit, and one process per log (the lock).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/core/profile_log.h"

using namespace flashio;
namespace fs = std::filesystem;

namespace {

// In a child: the library initialised as the driver does it, then exit(0); with `hold`, only once
// the parent closes the pipe's write end.
pid_t injected_child(const std::string& log, const int* hold = nullptr) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setenv("FLASHIO_PROFILE_LOG", log.c_str(), 1);
  void* lib = dlopen(FLASHIO_INJECT_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!lib) _exit(90);
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  if (!init || init() != 1) _exit(91);
  if (hold) {  // keep the log until the parent closes the pipe
    close(hold[1]);
    char c;
    while (read(hold[0], &c, 1) > 0) {
    }
  }
  std::exit(0);  // exit handlers run: the library's last flush
}

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string temp_log() {
  const fs::path p = fs::temp_directory_path() / ("flashio-inject-test-" + std::to_string(getpid()) + ".jsonl");
  std::ofstream(p).close();
  return p.string();
}

}  // namespace

TEST(InjectLibrary, WritesItsStartAndItsEndAtExit) {
  const std::string log = temp_log();
  ASSERT_EQ(wait_for(injected_child(log)), 0);
  const ProfileLog l = read_profile_log(log);
  EXPECT_TRUE(l.started);
  EXPECT_TRUE(l.ended);
  EXPECT_EQ(l.bad_lines, 0);
  EXPECT_TRUE(l.launches.empty());
  fs::remove(log);
}

TEST(InjectLibrary, OneProcessPerLog) {
  const std::string log = temp_log();
  int hold[2];
  ASSERT_EQ(pipe(hold), 0);
  const pid_t first = injected_child(log, hold);
  // The first holds the log; wait until its start line is there, then start a second.
  for (int i = 0; i < 500 && !read_profile_log(log).started; ++i) usleep(10000);
  close(hold[0]);
  const pid_t second = injected_child(log);  // finds the log taken: writes nothing
  EXPECT_EQ(wait_for(second), 0);
  close(hold[1]);
  EXPECT_EQ(wait_for(first), 0);
  std::ifstream in(log);
  int starts = 0, ends = 0;
  for (std::string line; std::getline(in, line);) {
    starts += line.find("\"event\":\"start\"") != std::string::npos;
    ends += line.find("\"event\":\"end\"") != std::string::npos;
  }
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(ends, 1);
  fs::remove(log);
}

TEST(InjectLibrary, DoesNothingWithoutALog) {
  const pid_t pid = fork();
  if (pid == 0) {
    unsetenv("FLASHIO_PROFILE_LOG");
    void* lib = dlopen(FLASHIO_INJECT_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
    auto init = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection")) : nullptr;
    _exit(init && init() == 1 ? 0 : 1);  // loaded by hand (no flashio profile): a no-op
  }
  EXPECT_EQ(wait_for(pid), 0);
}
