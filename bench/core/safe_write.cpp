#include "bench/core/safe_write.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc >= 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/core/json_input.h"

namespace flashio {

namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

mode_t creation_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void check_output(const std::string& path, const std::vector<std::string>& inputs, bool overwrite,
                  const std::string& option) {
  auto refuse = [&](const std::string& why) { throw InputError(fmt::format("{}: '{}': {}", option, path, why)); };
  if (path.empty()) throw InputError(fmt::format("{}: an empty file name", option));
  if (path.back() == '/' || name_of(path) == "." || name_of(path) == "..") refuse("names a folder, not a file");
  const std::string dir = folder_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) refuse(fmt::format("folder '{}' does not exist", dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0) refuse(fmt::format("folder '{}' is not writable", dir));
  for (const auto& in : inputs)
    if (!in.empty() && same_file(path, in)) refuse(fmt::format("is the same file as the input '{}'", in));
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0) {  // it exists (a link, even a dangling one, counts)
    if (S_ISDIR(lst.st_mode)) refuse("is a folder");
    struct stat target {};
    if (!S_ISREG(lst.st_mode) && !(S_ISLNK(lst.st_mode) && ::stat(path.c_str(), &target) == 0 && S_ISREG(target.st_mode)))
      refuse("exists and is not a regular file");
    if (!overwrite) refuse("exists; pass --force to replace it");
  }
}

TempFile::TempFile(const std::string& final_path) : final_(final_path) {
  std::string templ = folder_of(final_path) + "/." + name_of(final_path) + ".XXXXXX";
  fd_ = ::mkostemp(templ.data(), O_CLOEXEC);
  if (fd_ < 0)
    throw std::runtime_error(fmt::format("cannot create a temporary file in '{}': {}", folder_of(final_path),
                                         std::strerror(errno)));
  path_ = templ;
  ::fchmod(fd_, creation_mode());  // mkstemp makes 0600; an output is an ordinary file
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !path_.empty()) ::unlink(path_.c_str());  // ours: created by mkstemp above
}

void TempFile::write(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
    done += size_t(n);
  }
}

void TempFile::commit(bool overwrite) {
  if (::fsync(fd_) != 0) throw std::runtime_error(fmt::format("cannot sync {}: {}", path_, std::strerror(errno)));
  const int rc = overwrite ? ::rename(path_.c_str(), final_.c_str())
                           : ::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, final_.c_str(), RENAME_NOREPLACE);
  if (rc != 0) {
    const int err = errno;
    if (err == EEXIST) throw InputError(fmt::format("'{}' exists; pass --force to replace it", final_));
    throw std::runtime_error(fmt::format("cannot rename {} to {}: {}", path_, final_, std::strerror(err)));
  }
  committed_ = true;
  // The rename on disk too: fsync the folder.
  const int dfd = ::open(folder_of(final_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes, bool overwrite) {
  TempFile t(path);
  t.write(bytes);
  t.commit(overwrite);
}

}  // namespace flashio
