#include "sandbox/sandbox_config.hpp"

#include <charconv>
#include <cstring>

#include "os/path_within.hpp"

namespace codeact::internal {
namespace {

bool IsAbsoluteClean(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.find('\0') != std::string::npos) return false;
  std::size_t at = 0;
  while (at < p.size()) {
    std::size_t next = p.find('/', at + 1);
    const std::string part =
        p.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    if (part == ".." || part == "." || (part.empty() && p.size() > 1)) return false;
    if (next == std::string::npos) break;
    at = next;
  }
  return true;
}

}  // namespace

std::vector<std::string> DefaultSystemPaths() {
  return {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache"};
}

std::string ReservedSandboxPath(const std::string& path) {
  for (const char* dir : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
                          "/proc", "/dev", kSandboxResourceDir}) {
    if (PathWithin(path, dir)) return std::string(dir) + " is provided by the sandbox";
  }
  if (path == kSandboxWorkDir || path == "/tmp") return path + " is provided by the sandbox";
  return "";
}

std::vector<std::string> EncodeSandboxArgs(const SandboxConfig& c) {
  std::vector<std::string> out{"--scratch",    c.scratch_dir,
                               "--tmp-bytes",  std::to_string(c.tmp_bytes),
                               "--work-bytes", std::to_string(c.work_bytes)};
  if (c.run_as_uid >= 0) out.insert(out.end(), {"--run-as", std::to_string(c.run_as_uid)});
  if (c.nproc >= 0) out.insert(out.end(), {"--nproc", std::to_string(c.nproc)});
  if (IsZygote(c)) {
    out.insert(out.end(), {"--zygote-uids", std::to_string(c.zygote_uids_first),
                           std::to_string(c.zygote_uids_count)});
  }
  for (const auto& p : c.cgroup_join) out.insert(out.end(), {"--cgroup-join", p});
  for (const auto& p : c.system_paths) out.insert(out.end(), {"--system", p});
  for (const auto& b : c.binds)
    out.insert(out.end(), {b.read_only ? "--bind-ro" : "--bind-rw", b.host_path, b.sandbox_path});
  out.push_back("--");
  out.insert(out.end(), c.command.begin(), c.command.end());
  return out;
}

StatusOr<SandboxConfig> DecodeSandboxArgs(const std::vector<std::string>& args) {
  SandboxConfig c;
  std::size_t i = 0;
  auto value = [&](const std::string& flag) -> StatusOr<std::string> {
    if (i + 1 >= args.size()) return InvalidArgument(flag + " needs a value");
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      c.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a == "--scratch" || a == "--system" || a == "--cgroup-join") {
      auto v = value(a);
      if (!v.ok()) return v.status();
      if (!IsAbsoluteClean(*v)) return InvalidArgument(a + " needs an absolute path: " + *v);
      if (a == "--scratch") {
        c.scratch_dir = *v;
      } else if (a == "--system") {
        c.system_paths.push_back(*v);
      } else {
        c.cgroup_join.push_back(*v);
      }
    } else if (a == "--tmp-bytes" || a == "--work-bytes" || a == "--run-as" || a == "--nproc") {
      auto v = value(a);
      if (!v.ok()) return v.status();
      std::int64_t& target = a == "--tmp-bytes"    ? c.tmp_bytes
                             : a == "--work-bytes" ? c.work_bytes
                             : a == "--run-as"     ? c.run_as_uid
                                                   : c.nproc;
      auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), target);
      // A uid of 0 would defeat the point of dropping to it.
      if (ec != std::errc() || end != v->data() + v->size() || target <= 0 ||
          (a == "--run-as" && target > 0xFFFFFFFELL)) {
        return InvalidArgument(a + " needs a positive number: " + *v);
      }
    } else if (a == "--zygote-uids") {
      if (i + 2 >= args.size()) return InvalidArgument(a + " needs a first uid and a count");
      std::int64_t* targets[] = {&c.zygote_uids_first, &c.zygote_uids_count};
      for (std::int64_t* target : targets) {
        const std::string& v = args[++i];
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *target);
        if (ec != std::errc() || end != v.data() + v.size() || *target <= 0 ||
            *target > 0xFFFFFFFELL) {
          return InvalidArgument(a + " needs positive numbers: " + v);
        }
      }
      if (c.zygote_uids_first + c.zygote_uids_count > 0xFFFFFFFFLL)
        return InvalidArgument(a + ": the range passes the last uid");
    } else if (a == "--bind-ro" || a == "--bind-rw") {
      if (i + 2 >= args.size()) return InvalidArgument(a + " needs a host path and a sandbox path");
      SandboxBind b{args[i + 1], args[i + 2], a == "--bind-ro"};
      i += 2;
      if (!IsAbsoluteClean(b.host_path) || !IsAbsoluteClean(b.sandbox_path) ||
          b.sandbox_path == "/") {
        return InvalidArgument(a + " needs two absolute paths: " + b.host_path + " " +
                               b.sandbox_path);
      }
      c.binds.push_back(std::move(b));
    } else {
      return InvalidArgument("unknown argument: " + a);
    }
  }
  if (c.scratch_dir.empty()) return InvalidArgument("--scratch is required");
  if (IsZygote(c) && (c.run_as_uid < c.zygote_uids_first ||
                      c.run_as_uid >= c.zygote_uids_first + c.zygote_uids_count)) {
    return InvalidArgument("--zygote-uids needs --run-as, a uid of the range");
  }
  if (c.command.empty() || c.command[0].empty() || c.command[0][0] != '/') {
    return InvalidArgument("an absolute command is required after --");
  }
  return c;
}

}  // namespace codeact::internal
