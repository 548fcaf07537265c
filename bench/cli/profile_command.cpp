#include "bench/cli/profile_command.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <link.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "bench/cli/bad_input.h"
#include "bench/cli/sweep_commands.h"
#include "bench/core/json_input.h"
#include "bench/core/profile_log.h"
#include "bench/core/record.h"
#include "bench/cuda/device_query.h"
#if FLASHIO_CUDA_BUILD
#include "bench/measure/cupti_profiler.h"
#endif

extern char** environ;

namespace flashio {
namespace {

namespace fs = std::filesystem;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The folder of this executable (the build folder, or the installed bin/).
fs::path own_folder() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// libflashio_inject.so: $FLASHIO_INJECT_LIBRARY, else beside flashio (the build folder), else in
// the installed lib/ folder; empty where there is none.
std::string inject_library() {
  if (const char* env = std::getenv("FLASHIO_INJECT_LIBRARY"); env && *env) return is_executable_file(env) ? env : "";
  const fs::path here = own_folder();
  for (const fs::path& p : {here / "libflashio_inject.so", here / ".." / "lib" / "libflashio_inject.so"})
    if (fs::exists(p)) return fs::absolute(p).lexically_normal().string();
  return "";
}

// The file the CUPTI library of this build is loaded from (NVTX_INJECTION64_PATH needs a path),
// or the reason there is none.
std::string cupti_path(std::string& why_not) {
#if FLASHIO_CUDA_BUILD
  const std::string name = CounterSession::default_library();
  void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!h && name == "libcupti.so.13") h = dlopen("libcupti.so", RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    why_not = fmt::format("CUPTI library not loadable: {}", e ? e : name);
    return "";
  }
  link_map* map = nullptr;
  std::string path = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name ? map->l_name : name;
  dlclose(h);
  return path;
#else
  why_not = "this flashio was built without CUDA (FLASHIO_CUDA=OFF): it has no CUPTI and no injection library";
  return "";
#endif
}

std::string default_out() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return fmt::format("profile-{}.json", stamp);
}

// A temporary file for the injection library's log, removed on destruction.
struct Log {
  std::string path;
  Log() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = fmt::format("{}/flashio-profile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    const int fd = ::mkstemp(templ.data());
    if (fd < 0)
      throw std::runtime_error(fmt::format("cannot create the profile log in {}: {}", templ, std::strerror(errno)));
    ::close(fd);
    path = templ;
  }
  ~Log() { std::remove(path.c_str()); }
  void append(const nlohmann::json& line) const {
    std::FILE* f = std::fopen(path.c_str(), "a");
    if (!f) return;
    std::fputs((line.dump() + "\n").c_str(), f);
    std::fclose(f);
  }
};

// The child's environment: ours with the injection's variables set.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (!set.count(kv.substr(0, kv.find('=')))) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

// Signals while the program runs: SIGTERM and SIGHUP are passed on to it; SIGINT is ignored here,
// since a terminal's Ctrl-C reaches the program itself (one process group) and it decides. Either
// way flashio waits for the program, then writes what was measured.
volatile sig_atomic_t g_child = 0;
extern "C" void forward_signal(int sig) {
  if (g_child > 0) ::kill(pid_t(g_child), sig);
}

// Runs the command with `env`; returns its exit status (128 + N where signal N ended it).
int run_child(const std::string& path, const std::vector<std::string>& command, const std::vector<std::string>& env) {
  std::vector<char*> argv, envp;
  for (const auto& s : command) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  for (const auto& s : env) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  // The handlers are set before the program starts (a signal may come at once); it starts with
  // the dispositions flashio was given (default, or ignored where the caller ignored them).
  auto old_int = std::signal(SIGINT, SIG_IGN);
  auto old_term = std::signal(SIGTERM, forward_signal);
  auto old_hup = std::signal(SIGHUP, forward_signal);
  struct Restore {
    decltype(old_int) i, t, h;
    ~Restore() {
      std::signal(SIGINT, i);
      std::signal(SIGTERM, t);
      std::signal(SIGHUP, h);
    }
  } restore{old_int, old_term, old_hup};
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (auto [sig, was] : {std::pair{SIGINT, old_int}, {SIGTERM, old_term}, {SIGHUP, old_hup}})
    if (was != SIG_IGN) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, path.c_str(), nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (err != 0)  // ENOEXEC, EACCES: nothing ran
    throw BadInput(fmt::format("profile: cannot run {}: {}", path, std::strerror(err)));
  g_child = pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::string find_executable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, colon - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    start = colon + 1;
  }
  return "";
}

int cmd_profile(const ProfileArgs& a) {
  // Everything the user can get wrong is refused before the program starts.
  if (a.command.empty()) throw BadInput("profile: no command given (flashio profile [options] -- COMMAND ARGS...)");
  const auto set = parse_counter_set(a.counters);
  if (!set || *set == CounterSet::Off)
    throw BadInput(fmt::format("--counters: '{}' is not one of dram, full", a.counters));
  if (a.cache_control != "all" && a.cache_control != "none")
    throw BadInput(fmt::format("--cache-control: '{}' is not one of all, none", a.cache_control));
  std::optional<std::regex> range;
  if (!a.range.empty()) {
    try {
      range = parse_range_pattern(a.range);
    } catch (const std::invalid_argument& e) {
      throw BadInput(e.what());
    }
  }
  const std::string program = find_executable(a.command[0]);
  if (program.empty())
    throw BadInput(fmt::format("profile: '{}': no such command (not an executable file{})", a.command[0],
                               a.command[0].find('/') == std::string::npos ? " in $PATH" : ""));
  const std::string out = a.out.empty() ? default_out() : a.out;
  check_writable(out, "--out", {program}, a.force);  // never over the program it runs

  // The injection: the library and CUPTI for NVTX, unless another tool injects its own.
  const Log log;
  std::map<std::string, std::string> env = {{"FLASHIO_PROFILE_LOG", log.path},
                                            {"FLASHIO_PROFILE_SET", to_string(*set)},
                                            {"FLASHIO_PROFILE_CACHE_CONTROL", a.cache_control}};
  if (range) env["FLASHIO_PROFILE_RANGE"] = a.range;  // only the launches inside matching ranges are replayed
  std::string why_not;
  const std::string cupti = cupti_path(why_not);
  const std::string inject = cupti.empty() ? "" : inject_library();
  const char* other = std::getenv("CUDA_INJECTION64_PATH");
  if (other && *other && inject != other) {
    log.append(unavailable_line(-1, fmt::format("CUDA_INJECTION64_PATH is set to {} (another tool, such as Nsight "
                                                "Compute, injects its own library): the program ran without counters",
                                                other)));
  } else if (cupti.empty()) {
    log.append(unavailable_line(-1, why_not));
  } else if (inject.empty()) {
    log.append(unavailable_line(-1, fmt::format("libflashio_inject.so not found beside {} nor in ../lib (set "
                                                "FLASHIO_INJECT_LIBRARY)",
                                                own_folder().string())));
  } else {
    env["CUDA_INJECTION64_PATH"] = inject;
    env["FLASHIO_CUPTI_LIBRARY"] = cupti;
    if (const char* nvtx = std::getenv("NVTX_INJECTION64_PATH"); !nvtx || !*nvtx) env["NVTX_INJECTION64_PATH"] = cupti;
  }

  const int exit_code = run_child(program, a.command, child_environment(env));

  // What the library wrote, as records.
  const ProfileLog plog = read_profile_log(log.path);
  const nlohmann::json records = profile_records(plog, range);
  const std::vector<std::string> notes = profile_notes(plog, range, records);
  ResultFile file;
  file.run_id = new_run_id();
  file.created = utc_timestamp();
  file.command_line = a.command_line;
  file.producer = "flashio profile";
  file.build = a.build;
  if (plog.started) {  // the program used a GPU: describe it (the first one it profiled)
    const int device = plog.launches.empty() ? 0 : plog.launches.front().device;
    std::string why;
    if (const auto dev = query_device(device, &why)) file.device = to_json(*dev);
  }
  file.profile = {{"command", a.command},
                  {"exit_code", exit_code},
                  {"set", to_string(*set)},
                  {"cache_control", a.cache_control},
                  {"launches", plog.total_launches},
                  {"notes", notes},
                  {"records", records}};
  if (range) file.profile["range"] = a.range;
  try {
    result_file_schema().check(to_json(file), out);  // never a file its readers refuse
  } catch (const InputError& e) {
    throw std::runtime_error(fmt::format("the profile does not fit results/schema.json (a defect): {}", e.what()));
  }
  write_result_file(file, out, a.force);

  for (const auto& n : notes) fmt::print(stderr, "flashio: note: {}\n", n);
  fmt::print(stderr, "flashio: {} kernel launch{}, {} record{} ({} counters) written to {}; the program exited {}\n",
             plog.total_launches, plog.total_launches == 1 ? "" : "es", records.size(), records.size() == 1 ? "" : "s",
             to_string(*set), out, exit_code);
  return exit_code;
}

}  // namespace flashio
