// Writing outputs without losing files. An output is written to a temporary file that flashio
// creates, with a unique name (mkstemp), in the output's own folder; it is fsynced and then
// renamed onto the output, so a reader never sees half a file and a crash leaves either the old
// file or the new one. flashio deletes only temporary files it created itself: never a fixed
// name such as `<out>.tmp`, which might be someone else's file.
//
// Before any work, check_output() refuses (InputError, exit 2) an output that is the same file as
// one of the inputs (compared by identity, st_dev and st_ino, never by spelling: `./a.json`,
// `sub/../a.json` and a link to a.json are all a.json), that is not a regular file, whose folder
// does not exist or cannot be written, or that already exists when overwriting is not allowed.
#pragma once
#include <string>
#include <vector>

namespace flashio {

// Whether two paths name the same existing file (both stat()-able, same device and inode).
bool same_file(const std::string& a, const std::string& b);

// Throws InputError "<option>: <path>: <why>" when `path` may not be written (see above). With
// `overwrite`, an existing regular file may be replaced.
void check_output(const std::string& path, const std::vector<std::string>& inputs, bool overwrite,
                  const std::string& option);

// A temporary file created next to `final_path` (".<name>.XXXXXX" in its folder, mode 0666 less
// the umask, as a file created by open()); removed by the destructor unless committed.
class TempFile {
 public:
  explicit TempFile(const std::string& final_path);  // throws std::runtime_error
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  void write(const std::string& bytes);  // all of them, or throws
  // fsync, then rename onto final_path (without `overwrite`: only if final_path does not exist,
  // atomically). The descriptor stays open (it now writes final_path); throws on failure.
  void commit(bool overwrite);

 private:
  std::string final_, path_;
  int fd_ = -1;
  bool committed_ = false;
};

// TempFile + write + commit, closing the file.
void write_file_atomically(const std::string& path, const std::string& bytes, bool overwrite);

}  // namespace flashio
