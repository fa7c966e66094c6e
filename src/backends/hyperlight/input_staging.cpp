#include "backends/hyperlight/input_staging.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "common/sha256.hpp"
#include "process/posix_util.hpp"

namespace codeact::internal {
namespace {

struct Entry {
  std::string name;
  std::string path;
  struct stat st {};
};

// The names in `dir` (not "." and ".."), sorted; each lstat'ed.
StatusOr<std::vector<Entry>> List(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return InvalidArgument("input directory " + dir + ": " + ErrnoText(errno));
  std::vector<Entry> out;
  Status failure = Status::Ok();
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    Entry entry{name, dir + "/" + name, {}};
    if (::lstat(entry.path.c_str(), &entry.st) != 0) {
      failure = InvalidArgument("input " + entry.path + ": " + ErrnoText(errno));
      break;
    }
    out.push_back(std::move(entry));
  }
  ::closedir(d);
  if (!failure.ok()) return failure;
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

Status CheckRoot(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return InvalidArgument("input directory " + dir + ": " + ErrnoText(errno));
  }
  if (S_ISLNK(st.st_mode)) return InvalidArgument("input directory " + dir + " is a symlink");
  if (!S_ISDIR(st.st_mode))
    return InvalidArgument("input directory " + dir + " is not a directory");
  return Status::Ok();
}

// No symlink anywhere below `dir` (the subdirectories too: what is not staged today must not
// become a way out tomorrow), walked without following links and bounded.
Status CheckNoSymlinks(const std::string& dir) {
  std::vector<std::string> todo = {dir};
  std::int64_t seen = 0;
  while (!todo.empty()) {
    const std::string current = std::move(todo.back());
    todo.pop_back();
    auto entries = List(current);
    if (!entries.ok()) return entries.status();
    for (const Entry& e : *entries) {
      if (++seen > kMaxInputTreeEntries) {
        return InvalidArgument("input directory " + dir + " holds more than " +
                               std::to_string(kMaxInputTreeEntries) + " entries");
      }
      if (S_ISLNK(e.st.st_mode)) {
        return InvalidArgument("input " + e.path +
                               " is a symlink: the hyperlight backend refuses symlinks inside its "
                               "inputs; copy the file there instead");
      }
      if (S_ISDIR(e.st.st_mode)) todo.push_back(e.path);
    }
  }
  return Status::Ok();
}

// The top-level regular files of every input, by name, with the refusals of the header.
StatusOr<std::vector<Entry>> Collect(const std::vector<std::string>& input_dirs) {
  std::map<std::string, std::string> owner;  // name -> the input that has it
  std::vector<Entry> files;
  std::int64_t bytes = 0;
  for (const auto& dir : input_dirs) {
    if (Status s = CheckRoot(dir); !s.ok()) return s;
    if (Status s = CheckNoSymlinks(dir); !s.ok()) return s;
    auto entries = List(dir);
    if (!entries.ok()) return entries.status();
    for (Entry& e : *entries) {
      if (S_ISDIR(e.st.st_mode)) continue;  // unreachable in the flat /input
      if (!S_ISREG(e.st.st_mode)) {
        return InvalidArgument("input " + e.path + " is not a regular file or a directory");
      }
      if (auto [it, fresh] = owner.emplace(e.name, dir); !fresh) {
        return InvalidArgument("input name \"" + e.name + "\" is in both " + it->second + " and " +
                               dir + ": the inputs are merged into one flat /input");
      }
      bytes += e.st.st_size;
      if (static_cast<std::int64_t>(files.size()) + 1 > kMaxStagedInputFiles) {
        return InvalidArgument("the inputs hold more than " + std::to_string(kMaxStagedInputFiles) +
                               " files");
      }
      if (bytes > kMaxStagedInputBytes) {
        return InvalidArgument("the inputs hold more than " + std::to_string(kMaxStagedInputBytes) +
                               " bytes");
      }
      files.push_back(std::move(e));
    }
  }
  std::sort(files.begin(), files.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return files;
}

std::string SignatureOf(const std::vector<Entry>& files) {
  std::string sig;
  for (const Entry& e : files) {
    sig += e.path + '\0' + std::to_string(e.st.st_size) + ':' + std::to_string(e.st.st_ino) + ':' +
           std::to_string(e.st.st_dev) + ':' + std::to_string(e.st.st_mtim.tv_sec) + '.' +
           std::to_string(e.st.st_mtim.tv_nsec) + ':' + std::to_string(e.st.st_ctim.tv_sec) + '.' +
           std::to_string(e.st.st_ctim.tv_nsec) + '\n';
  }
  return sig;
}

// Copies one file without following a symlink that replaced it since it was listed.
Status CopyFile(const Entry& from, const std::string& to, std::int64_t& bytes) {
  UniqueFd in(::open(from.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (in.get() < 0) return InvalidArgument("input " + from.path + ": " + ErrnoText(errno));
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return InvalidArgument("input " + from.path + " is no longer a regular file");
  }
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (out.get() < 0) return Internal("cannot create " + to + ": " + ErrnoText(errno));
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InvalidArgument("input " + from.path + ": " + ErrnoText(errno));
    if (n == 0) break;
    bytes += n;
    if (bytes > kMaxStagedInputBytes) {
      return InvalidArgument("the inputs hold more than " + std::to_string(kMaxStagedInputBytes) +
                             " bytes");
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.get(), buf + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Internal("cannot write " + to + ": " + ErrnoText(errno));
      done += w;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> InputSignature(const std::vector<std::string>& input_dirs) {
  auto files = Collect(input_dirs);
  if (!files.ok()) return files.status();
  return SignatureOf(*files);
}

StatusOr<std::shared_ptr<const StagedInputs>> StageInputs(
    const std::vector<std::string>& input_dirs) {
  auto files = Collect(input_dirs);
  if (!files.ok()) return files.status();
  auto dir = TempDir::Create("codeact-input-");
  if (!dir.ok()) return dir.status();
  auto staged = std::make_shared<StagedInputs>(StagedInputs{std::move(*dir), "", "", 0, 0});
  for (const Entry& e : *files) {
    if (Status s = CopyFile(e, staged->dir.path() + "/" + e.name, staged->bytes); !s.ok()) {
      return s;  // `staged` and its directory go with it
    }
    ++staged->files;
  }
  staged->signature = SignatureOf(*files);
  staged->digest = Sha256Hex(staged->signature);
  // The guest reads it; nobody writes it (the worker may run as another user: world-readable).
  ::chmod(staged->dir.path().c_str(), 0755);
  return std::shared_ptr<const StagedInputs>(std::move(staged));
}

}  // namespace codeact::internal
