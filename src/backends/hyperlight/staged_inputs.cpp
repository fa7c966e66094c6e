#include "backends/hyperlight/staged_inputs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "common/sha256.hpp"
#include "os/errno_status.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {
namespace {

std::string Stamp(const struct stat& st) {
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_dev);
}

class Listing {
 public:
  explicit Listing(const InputBounds& bounds) : bounds_(bounds) {}

  // One file, named `name` under /input.
  Status Add(std::string name, std::string source, const struct stat& st) {
    if (!S_ISREG(st.st_mode)) {
      return InvalidArgument("hyperlight input " + source + " is " + KindOf(st) +
                             ": only regular files are staged into /input");
    }
    auto [it, added] = sources_.emplace(name, source);
    if (!added) {
      return InvalidArgument("hyperlight inputs " + it->second + " and " + source +
                             " both give /input/" + name +
                             ": the guest's /input is flat, so names must differ");
    }
    total_bytes_ += st.st_size;
    if (bounds_.max_files > 0 && static_cast<std::int64_t>(files_.size()) >= bounds_.max_files) {
      return InvalidArgument("hyperlight inputs hold more than " +
                             std::to_string(bounds_.max_files) + " files");
    }
    if (bounds_.max_bytes > 0 && total_bytes_ > bounds_.max_bytes) {
      return InvalidArgument("hyperlight inputs hold more than " +
                             std::to_string(bounds_.max_bytes) + " bytes");
    }
    files_.push_back({std::move(name), std::move(source), st.st_size, Stamp(st)});
    return Status::Ok();
  }

  Status AddDirectory(const std::string& dir) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return InvalidArgument("hyperlight input " + dir + ": " + ErrnoText(errno));
    DIR* d = ::fdopendir(fd.get());
    if (d == nullptr) return InvalidArgument("hyperlight input " + dir + ": " + ErrnoText(errno));
    fd.release();  // closedir closes it
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    Status result = Status::Ok();
    for (const auto& name : names) {
      struct stat st {};
      const std::string source = dir + "/" + name;
      if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        result = InvalidArgument("hyperlight input " + source + ": " + ErrnoText(errno));
        break;
      }
      if (S_ISDIR(st.st_mode)) {
        result = InvalidArgument("hyperlight input " + source +
                                 " is a directory: the guest's /input is flat (give that "
                                 "directory as an input of its own)");
        break;
      }
      if (result = Add(name, source, st); !result.ok()) break;
    }
    ::closedir(d);
    return result;
  }

  std::vector<InputFile> Take() {
    std::sort(files_.begin(), files_.end(),
              [](const InputFile& a, const InputFile& b) { return a.name < b.name; });
    return std::move(files_);
  }

 private:
  static std::string KindOf(const struct stat& st) {
    if (S_ISLNK(st.st_mode)) return "a symlink (staged inputs never follow links)";
    if (S_ISDIR(st.st_mode)) return "a directory";
    return "not a regular file";
  }

  const InputBounds bounds_;
  std::map<std::string, std::string> sources_;  // /input name -> host path
  std::vector<InputFile> files_;
  std::int64_t total_bytes_ = 0;
};

std::string Signature(const std::vector<InputFile>& files) {
  std::string text;
  for (const auto& f : files) text += f.name + '\0' + f.source + '\0' + f.stamp + '\n';
  return Sha256Hex(text);
}

// Copies one listed file into `dir`, refusing it if it is no longer the file that was listed.
Status CopyInto(const InputFile& file, const std::string& dir) {
  UniqueFd in(::open(file.source.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC));
  if (!in) return InvalidArgument("hyperlight input " + file.source + ": " + ErrnoText(errno));
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode) || Stamp(st) != file.stamp) {
    return FailedPrecondition("hyperlight input " + file.source + " changed while it was staged");
  }
  const std::string target = dir + "/" + file.name;
  UniqueFd out(::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!out) return Internal("cannot create " + target + ": " + ErrnoText(errno));
  std::int64_t left = file.size;
  char buffer[1 << 16];
  while (left > 0) {
    const ssize_t n = ::read(in.get(), buffer,
                             static_cast<std::size_t>(std::min<std::int64_t>(left, sizeof buffer)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InvalidArgument("cannot read " + file.source + ": " + ErrnoText(errno));
    if (n == 0)
      return FailedPrecondition("hyperlight input " + file.source + " shrank while it was staged");
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.get(), buffer + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Internal("cannot write " + target + ": " + ErrnoText(errno));
      done += w;
    }
    left -= n;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<InputFile>> ListInputs(const std::vector<std::string>& inputs,
                                            const InputBounds& bounds) {
  Listing listing(bounds);
  for (const auto& given : inputs) {
    std::error_code ec;
    const std::string path = std::filesystem::absolute(given, ec).lexically_normal().string();
    if (ec) return InvalidArgument("hyperlight input " + given + ": " + ec.message());
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
      return InvalidArgument("hyperlight input " + given + ": " + ErrnoText(errno));
    Status added = S_ISDIR(st.st_mode)
                       ? listing.AddDirectory(path)
                       : listing.Add(std::filesystem::path(path).filename().string(), path, st);
    if (!added.ok()) return added;
  }
  return listing.Take();
}

InputStager::InputStager(std::vector<std::string> inputs, InputBounds bounds)
    : inputs_(std::move(inputs)), bounds_(bounds) {}

StatusOr<std::shared_ptr<const StagedInput>> InputStager::Current() {
  std::lock_guard lock(mu_);
  auto files = ListInputs(inputs_, bounds_);
  if (!files.ok()) return files.status();
  const std::string signature = Signature(*files);
  if (current_ && current_->signature == signature) return current_;
  auto dir = TempDir::Create("codeact-input-");
  if (!dir.ok()) return dir.status();
  for (const auto& f : *files) {
    if (Status s = CopyInto(f, dir->path()); !s.ok()) return s;
  }
  auto staged = std::make_shared<StagedInput>(StagedInput{std::move(*dir), signature, {}});
  for (const auto& f : *files) staged->names.push_back(f.name);
  current_ = std::move(staged);
  return current_;
}

}  // namespace codeact::internal
