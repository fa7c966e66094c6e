#include "cli/provider_flags.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "codeact/command_tool.hpp"
#include "codeact/json.hpp"
#include "common/egress_target.hpp"
#include "files/bounded_read.hpp"
#include "limits/limit_table.hpp"
#include "mcp_client/mcp_upstream.hpp"

namespace codeact::cli {
namespace {

StatusOr<std::int64_t> PositiveNumber(const std::string& flag, const std::string& text,
                                      double scale) {
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(value > 0) ||
      value * scale > 9e15) {
    return InvalidArgument(flag + " needs a positive number, got \"" + text + "\"");
  }
  return static_cast<std::int64_t>(value * scale);
}

// "64M", "1G", "512K", "1000": a count, or bytes with a binary suffix; nullopt unless positive.
std::optional<std::int64_t> ParseSize(const std::string& text, bool suffix_allowed) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  std::int64_t scale = 1;
  std::string digits = text;
  if (suffix_allowed) {
    const char last = digits.back();
    const std::string_view suffixes = "KMGT";
    if (const auto at = suffixes.find(static_cast<char>(std::toupper(last)));
        at != std::string_view::npos) {
      scale = 1LL << (10 * (at + 1));
      digits.pop_back();
    }
  }
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  const std::int64_t n = std::stoll(digits);
  if (n <= 0 || n > (std::int64_t{1} << 62) / scale) return std::nullopt;
  return n * scale;
}

// The mode part of --mount: ro, rw, or rw with its disk bounds ("rw,max=64M,files=10000").
Status ParseMountMode(const std::string& tail, const std::string& text, FileMount& m) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t comma = tail.find(',', start);
    parts.push_back(tail.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.front() != "ro" && parts.front() != "rw") {
    return InvalidArgument("--mount mode \"" + parts.front() + "\" in \"" + text +
                           "\" is not ro or rw");
  }
  m.mode = parts.front() == "ro" ? MountMode::kReadOnly : MountMode::kReadWrite;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const std::size_t eq = part.find('=');
    const std::string key = part.substr(0, eq);
    const bool bytes = key == "max";
    if (eq == std::string::npos || (key != "max" && key != "files")) {
      return InvalidArgument("--mount \"" + text + "\": \"" + part +
                             "\" is not max=SIZE (e.g. max=64M) or files=N");
    }
    if (m.mode != MountMode::kReadWrite) {
      return InvalidArgument("--mount \"" + text + "\": " + key +
                             "= bounds what a run writes, so only a rw mount takes it");
    }
    const auto n = ParseSize(part.substr(eq + 1), bytes);
    if (!n) {
      return InvalidArgument("--mount \"" + text + "\": " + key + "=" + part.substr(eq + 1) +
                             " is not a positive " + (bytes ? "size (e.g. 64M)" : "count"));
    }
    (bytes ? m.disk_bytes_limit : m.disk_files_limit) = *n;
  }
  return Status::Ok();
}

// HOST:MOUNT[:MODE], MODE ro or rw (default rw), rw with ",max=SIZE,files=N" (the mount's disk
// bounds, FileMount). MOUNT is an absolute path in the sandbox without ".."; HOST may itself hold
// ':' (the split is at the last colon before MOUNT).
StatusOr<FileMount> ParseMount(const std::string& text) {
  const std::string usage =
      "--mount needs HOST:MOUNT[:ro|:rw[,max=SIZE][,files=N]] with an absolute MOUNT, got \"" +
      text + "\"";
  FileMount m;
  std::string rest = text;
  auto colon = rest.rfind(':');
  if (colon == std::string::npos) return InvalidArgument(usage);
  // A last part that is not a path is the mode, whatever it says.
  if (const std::string tail = rest.substr(colon + 1);
      !tail.empty() && tail.front() != '/' && rest.find(':') != colon) {
    if (Status s = ParseMountMode(tail, text, m); !s.ok()) return s;
    rest.resize(colon);
    colon = rest.rfind(':');
  }
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
    return InvalidArgument(usage);
  m.host_path = rest.substr(0, colon);
  m.mount_path = rest.substr(colon + 1);
  // NormaliseMountPath would make "out" into "/out"; on the command line that is more likely a
  // mistake (HOST and MOUNT swapped, a missing slash) than a wish, so it is refused.
  if (m.mount_path.front() != '/') {
    return InvalidArgument("--mount path \"" + m.mount_path + "\" in \"" + text +
                           "\" must be absolute, e.g. /" + m.mount_path);
  }
  auto normal = NormaliseMountPath(m.mount_path);
  if (!normal.ok())
    return InvalidArgument("--mount \"" + text + "\": " + normal.status().message());
  return m;
}

// The limit flags, from the limit table: "  --timeout S   wall-clock limit ... (default 30)".
std::string LimitFlagsHelp() {
  const ExecutionLimits defaults;
  std::string out;
  for (const auto& spec : internal::LimitTable()) {
    if (spec.flag.empty()) continue;
    const std::string metavar = spec.flag_scale == 1000.0 || spec.unit == "s" ? " S" : " N";
    std::string line = "  " + std::string(spec.flag) + metavar;
    line.resize(std::max<std::size_t>(line.size() + 1, 25), ' ');
    const double shown = static_cast<double>(defaults.*spec.member) / spec.flag_scale;
    char number[32];
    std::snprintf(number, sizeof number, "%.15g", shown);
    out += line + std::string(spec.help) + " (default " + number + ")\n";
  }
  return out;
}

constexpr const char* kOtherFlagsHelp =
    R"(  --mount HOST:MOUNT[:ro|:rw]   a host directory, or a single host file, the code may use
                         (repeatable; default rw); a file's MOUNT names the file itself, e.g.
                         --mount ./config.json:/data/config.json:ro; rw,max=64M,files=10000
                         bounds what a run may add to a directory (default 256M, 65536 files)
  --env K=V              a variable of the child's environment (repeatable; nothing else is passed)
  --tools FILE           host tools as commands (see include/codeact/command_tool.hpp)
  --policy FILE          validator policy as JSON lists (custom lists replace the defaults)
  --allow-import M       allow one more module (repeatable)
  --block-import M       block a module (repeatable)
  --allowed-imports LIST the import allow-list, comma-separated, replacing the default
  --blocked-imports LIST the default block list replaced (blocked under a parent or wildcard
                         entry; an exact allow entry beats it)
  --allowed-builtins LIST  only these builtins, comma-separated (the blocked ones stay blocked)
  --workdir DIR          a host directory as the code's working files: read-write at /work
  --no-validate          skip the validator (trusted code only)
  --approve              approve runs that need approval
  --python PATH          child interpreter (default: the embedded validator's installation)
  --run-as-uids FIRST[:COUNT]   a root host's per-run uids (default 1879048192:65536)
  --site-packages        let the code import installed third-party packages (slower start)
  --accept-weaker-limits where no cgroup can be made for runs, apply explicit --memory-mb and
                         --max-processes as rlimits alone instead of refusing them
  --pool N               interpreters kept started ahead of time, each used for one run
                         (default 2 for mcp, 0 for run; 0 turns the pool off; --warm-pool N too)
  --isolation L          auto (default: namespaces where the kernel allows it, else process),
                         process or namespaces (an explicit level runs as asked or not at all)
  --require-isolation L  fail unless the level that runs is at least L (process < namespaces)
  --backend local|hyperlight    where the code runs (default local; hyperlight: a micro-VM)
  --input PATH           hyperlight: a host directory (its files) or file the code reads at
                         /input/NAME (read-only, flat; repeatable; --input-dir too); staged as
                         a private copy, again whenever the contents change
  --output-wait-ms N     hyperlight: wait N ms after each run before reading /output, for
                         files written late (default 0, at most 10000)
  --allow-domain TARGET[:METHODS] a network target the code may reach (hyperlight: from the
                         guest; local: through the host tools http_get, http_post and
                         http_request): https://HOST[:PORT], http://HOST[:PORT] or HOST
                         (https, port 443), e.g. api.example.com:GET,POST (repeatable;
                         default: none)
  --hyperlight-sdk DIR   hyperlight: import hyperlight_sandbox from DIR first (tests use a fake)
  --mcp-server NAME=COMMAND   an upstream MCP server (stdio) whose tools the code calls as
                         `await NAME.tool(...)` (repeatable). COMMAND is split into words like
                         a shell would ('...', "...", \ escapes) but no shell runs it: no $VAR,
                         globs or redirections. e.g. --mcp-server 'fs=npx server-fs /data'
  --mcp-server-approval NAME=MODE   which tools of server NAME need approval: none (default),
                         annotations (all but those annotated readOnlyHint or not
                         destructiveHint) or all
  --mcp-call-timeout S   one upstream tool call's limit (default 60)
  --session-idle-expiry S   sessions (mcp, repl): close one unused this long (default 600)
  --max-sessions N       sessions open at once; one more is refused (default 16)
  --sessions-memory-mb N the memory of all sessions together (default 4096)
)";

}  // namespace

std::string ProviderFlagsHelp() {
  static const std::string help = LimitFlagsHelp() + kOtherFlagsHelp;
  return help;
}

FlagSpec WithProviderFlags(FlagSpec spec) {
  for (const auto& limit : internal::LimitTable()) {
    if (!limit.flag.empty()) spec.with_value.insert(std::string(limit.flag));
  }
  for (const char* f : {"--run-as-uids",
                        "--mount",
                        "--env",
                        "--tools",
                        "--policy",
                        "--allow-import",
                        "--block-import",
                        "--python",
                        "--pool",
                        "--warm-pool",
                        "--isolation",
                        "--require-isolation",
                        "--backend",
                        "--input",
                        "--input-dir",
                        "--output-wait-ms",
                        "--allow-domain",
                        "--hyperlight-sdk",
                        "--session-idle-expiry",
                        "--max-sessions",
                        "--sessions-memory-mb",
                        "--mcp-server",
                        "--mcp-server-approval",
                        "--mcp-call-timeout",
                        "--workdir",
                        "--allowed-builtins",
                        "--allowed-imports",
                        "--blocked-imports"}) {
    spec.with_value.insert(f);
  }
  spec.switches.insert("--no-validate");
  spec.switches.insert("--approve");
  spec.switches.insert("--site-packages");
  spec.switches.insert("--accept-weaker-limits");
  return spec;
}

StatusOr<IsolationLevel> ParseIsolation(const std::string& flag, const std::string& text) {
  for (IsolationLevel level :
       {IsolationLevel::kAuto, IsolationLevel::kProcess, IsolationLevel::kNamespaces}) {
    if (text == IsolationName(level)) return level;
  }
  return InvalidArgument(flag + " must be auto, process or namespaces, got \"" + text + "\"");
}

namespace {

// --isolation and --require-isolation as one level for the executor.
StatusOr<IsolationLevel> IsolationFlags(const Args& args) {
  IsolationLevel level = IsolationLevel::kAuto;
  if (auto text = args.Get("--isolation")) {
    auto parsed = ParseIsolation("--isolation", *text);
    if (!parsed.ok()) return parsed.status();
    level = *parsed;
  }
  if (auto text = args.Get("--require-isolation")) {
    auto required = ParseIsolation("--require-isolation", *text);
    if (!required.ok()) return required.status();
    if (*required == IsolationLevel::kNamespaces) {
      if (level == IsolationLevel::kProcess) {
        return InvalidArgument("--isolation process contradicts --require-isolation namespaces");
      }
      level = IsolationLevel::kNamespaces;
    }
  }
  return level;
}

}  // namespace

namespace {

Status LimitFlags(const Args& args, ExecutionLimits& limits) {
  for (const auto& spec : internal::LimitTable()) {
    if (spec.flag.empty()) continue;
    const std::string flag(spec.flag);
    if (auto text = args.Get(flag)) {
      auto value = PositiveNumber(flag, *text, spec.flag_scale);
      if (!value.ok()) return value.status();
      // A fraction of a unit the kernel counts whole (RLIMIT_CPU seconds) rounds up, not to zero.
      limits.*spec.member = std::max<std::int64_t>(*value, 1);
    }
  }
  return Status::Ok();
}

// --session-idle-expiry, --max-sessions and --sessions-memory-mb.
Status SessionFlags(const Args& args, SessionSettings& sessions) {
  if (auto text = args.Get("--session-idle-expiry")) {
    auto ms = PositiveNumber("--session-idle-expiry", *text, 1000.0);
    if (!ms.ok()) return ms.status();
    sessions.idle_expiry_ms = std::max<std::int64_t>(*ms, 1);
  }
  if (auto text = args.Get("--max-sessions")) {
    auto n = PositiveNumber("--max-sessions", *text, 1.0);
    if (!n.ok()) return n.status();
    if (*n < 1 || *n > 4096) return InvalidArgument("--max-sessions must be from 1 to 4096");
    sessions.max_sessions = static_cast<int>(*n);
  }
  if (auto text = args.Get("--sessions-memory-mb")) {
    auto bytes = PositiveNumber("--sessions-memory-mb", *text, 1024.0 * 1024.0);
    if (!bytes.ok()) return bytes.status();
    sessions.total_memory_bytes = *bytes;
  }
  return Status::Ok();
}

// --env, --policy, --allow-import, --block-import and --no-validate.
Status CodeFlags(const Args& args, ProviderOptions& options) {
  for (const auto& kv : args.GetAll("--env")) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgument("--env needs K=V, got \"" + kv + "\"");
    options.environment[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (auto file = args.Get("--policy")) {
    auto text = ReadInput(*file, internal::kMaxConfigFileBytes, "policy file");
    if (!text.ok()) return text.status();
    auto policy = PolicyFromJson(*text);
    if (!policy.ok()) return InvalidArgument(*file + ": " + policy.status().message());
    options.policy = std::move(*policy);
  }
  // The lists that replace a default: one flag, comma-separated ("" is the empty list).
  auto list_flag = [&](const char* flag, std::optional<std::vector<std::string>>& out) -> Status {
    auto text = args.Get(flag);
    if (!text) return Status::Ok();
    std::vector<std::string> items;
    std::size_t start = 0;
    while (start <= text->size() && !text->empty()) {
      const std::size_t comma = std::min(text->find(',', start), text->size());
      std::string item = text->substr(start, comma - start);
      if (item.empty()) {
        return InvalidArgument(std::string(flag) + " needs NAME[,NAME...], got \"" + *text + "\"");
      }
      items.push_back(std::move(item));
      start = comma + 1;
    }
    out = std::move(items);
    return Status::Ok();
  };
  if (Status s = list_flag("--allowed-imports", options.policy.allowed_imports); !s.ok()) return s;
  if (Status s = list_flag("--blocked-imports", options.policy.blocked_imports); !s.ok()) return s;
  if (Status s = list_flag("--allowed-builtins", options.policy.allowed_builtins); !s.ok())
    return s;
  if (auto dir = args.Get("--workdir")) options.working_directory = *dir;
  for (const auto& m : args.GetAll("--allow-import"))
    options.policy.extra_allowed_imports.push_back(m);
  for (const auto& m : args.GetAll("--block-import"))
    options.policy.extra_blocked_imports.push_back(m);
  options.validate = !args.Has("--no-validate");
  return Status::Ok();
}

StatusOr<RunUidRange> RunUidsFlag(const std::string& text) {
  unsigned long long first = 0, count = 65536;
  const int fields = std::sscanf(text.c_str(), "%llu:%llu", &first, &count);
  if (fields < 1 || first == 0 || count == 0 || first + count > 0xFFFFFFFFULL ||
      text.find_first_not_of("0123456789:") != std::string::npos) {
    return InvalidArgument("--run-as-uids needs FIRST[:COUNT] of unprivileged uids, got \"" + text +
                           "\"");
  }
  return RunUidRange{static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(count)};
}

// The executor's options that are flags of their own (the backend's are BackendFlags').
Status ExecutorFlags(const Args& args, int default_pool_size, ExecutorOptions& executor) {
  if (auto python = args.Get("--python")) executor.python_path = *python;
  if (auto range = args.Get("--run-as-uids")) {
    auto uids = RunUidsFlag(*range);
    if (!uids.ok()) return uids.status();
    executor.run_uids = *uids;
  }
  executor.site_packages = args.Has("--site-packages");
  executor.accept_weaker_limits = args.Has("--accept-weaker-limits");
  executor.warm_pool_size = default_pool_size;
  for (const char* flag : {"--warm-pool", "--pool"}) {  // --warm-pool: the older name
    if (auto text = args.Get(flag)) {
      int size = -1;
      const auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), size);
      if (ec != std::errc() || ptr != text->data() + text->size() || size < 0 || size > 64) {
        return InvalidArgument(std::string(flag) + " needs an integer from 0 to 64, got \"" +
                               *text + "\"");
      }
      executor.warm_pool_size = size;
    }
  }
  auto isolation = IsolationFlags(args);
  if (!isolation.ok()) return isolation.status();
  executor.isolation = *isolation;
  return Status::Ok();
}

StatusOr<std::vector<FileMount>> MountFlags(const Args& args) {
  std::vector<FileMount> mounts;
  std::map<std::string, std::string> mount_flags;  // normalised mount path -> the flag naming it
  for (const auto& text : args.GetAll("--mount")) {
    auto mount = ParseMount(text);
    if (!mount.ok()) return mount.status();
    // The registry keys mounts by path, so a second one would silently replace the first.
    const std::string key = NormaliseMountPath(mount->mount_path).value();
    if (auto [it, fresh] = mount_flags.emplace(key, text); !fresh) {
      return InvalidArgument("--mount \"" + text + "\" uses the mount path " + key +
                             " of --mount \"" + it->second + "\" again");
    }
    mounts.push_back(std::move(*mount));
  }
  return mounts;
}

// The flags that belong to one backend: given with the other, they are refused, not dropped.
struct BackendFlag {
  const char* flag;
  BackendKind backend;
  const char* instead;  // what to use with the other backend, or ""
};
constexpr BackendFlag kBackendFlags[] = {
    {"--mount", BackendKind::kLocal,
     "; with --backend hyperlight use --input (read-only at /input) and files "
     "written under /output"},
    {"--pool", BackendKind::kLocal, ""},
    {"--warm-pool", BackendKind::kLocal, ""},
    {"--site-packages", BackendKind::kLocal, ""},
    {"--accept-weaker-limits", BackendKind::kLocal, ""},
    {"--run-as-uids", BackendKind::kLocal, ""},
    {"--isolation", BackendKind::kLocal, "; hyperlight always runs in a micro-VM"},
    {"--workdir", BackendKind::kLocal,
     "; with --backend hyperlight use --input (read-only at /input) and files "
     "written under /output"},
    {"--input", BackendKind::kHyperlight, ""},
    {"--input-dir", BackendKind::kHyperlight, ""},
    {"--output-wait-ms", BackendKind::kHyperlight, ""},
    {"--hyperlight-sdk", BackendKind::kHyperlight, ""},
};

// --backend and the flags of one backend.
Status BackendFlags(const Args& args, ProviderOptions& options) {
  const std::string backend = args.Get("--backend").value_or("local");
  if (backend == "local") {
    options.executor.backend = BackendKind::kLocal;
  } else if (backend == "hyperlight") {
    options.executor.backend = BackendKind::kHyperlight;
  } else {
    return InvalidArgument("--backend needs local or hyperlight, got \"" + backend + "\"");
  }
  for (const BackendFlag& f : kBackendFlags) {
    if (f.backend == options.executor.backend || args.GetAll(f.flag).empty()) continue;
    // --isolation auto means the backend's own level, whichever it is.
    if (std::string_view(f.flag) == "--isolation" && args.Get(f.flag) == "auto") continue;
    return InvalidArgument(std::string(f.flag) + " is for the " +
                           std::string(BackendName(f.backend)) + " backend" + f.instead);
  }
  if (options.executor.backend == BackendKind::kHyperlight) {
    // A micro-VM is the strongest level there is: --require-isolation is met.
    options.executor.isolation = IsolationLevel::kAuto;
    HyperlightOptions& hyperlight = options.executor.hyperlight;
    for (const char* flag : {"--input", "--input-dir"}) {
      for (const auto& input : args.GetAll(flag)) {
        if (input.empty()) return InvalidArgument(std::string(flag) + " needs a path");
        hyperlight.inputs.push_back(input);
      }
    }
    if (auto wait = args.Get("--output-wait-ms")) {
      std::int64_t ms = -1;
      const auto [ptr, ec] = std::from_chars(wait->data(), wait->data() + wait->size(), ms);
      if (ec != std::errc() || ptr != wait->data() + wait->size() || ms < 0 ||
          ms > HyperlightOptions::kMaxOutputWaitMs) {
        return InvalidArgument("--output-wait-ms needs a whole number of milliseconds from 0 to " +
                               std::to_string(HyperlightOptions::kMaxOutputWaitMs) + ", got \"" +
                               *wait + "\"");
      }
      hyperlight.output_wait_ms = ms;
    }
    if (auto sdk = args.Get("--hyperlight-sdk")) options.executor.hyperlight.sdk_path = *sdk;
  }
  // Both backends have egress (the guest's SDK, the local backend's host tools): one grammar,
  // checked here so that a typo is exit 2 before anything starts.
  for (const auto& d : args.GetAll("--allow-domain")) {
    if (auto target = internal::ParseEgressTarget(d); !target.ok()) {
      return InvalidArgument("--allow-domain: " + target.status().message());
    }
  }
  return Status::Ok();
}

// --mcp-server NAME=COMMAND, --mcp-server-approval NAME=MODE and --mcp-call-timeout S.
StatusOr<std::vector<McpUpstreamOptions>> McpServerFlags(const Args& args) {
  std::vector<McpUpstreamOptions> servers;
  std::int64_t call_timeout_ms = McpUpstreamOptions{}.call_timeout_ms;
  if (auto t = args.Get("--mcp-call-timeout")) {
    auto ms = PositiveNumber("--mcp-call-timeout", *t, 1000.0);
    if (!ms.ok()) return ms.status();
    call_timeout_ms = *ms;
  }
  for (const auto& text : args.GetAll("--mcp-server")) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgument("--mcp-server needs NAME=COMMAND, got \"" + text + "\"");
    McpUpstreamOptions server;
    server.name = text.substr(0, eq);
    auto words = SplitCommandLine(text.substr(eq + 1));
    if (!words.ok())
      return InvalidArgument("--mcp-server " + server.name + ": " + words.status().message());
    server.command = std::move(*words);
    server.call_timeout_ms = call_timeout_ms;
    for (const auto& other : servers) {
      if (other.name == server.name)
        return InvalidArgument("--mcp-server " + server.name + " is given twice");
    }
    servers.push_back(std::move(server));
  }
  for (const auto& text : args.GetAll("--mcp-server-approval")) {
    const auto eq = text.find('=');
    const std::string name = text.substr(0, eq);
    const std::string mode = eq == std::string::npos ? "" : text.substr(eq + 1);
    auto it = std::find_if(servers.begin(), servers.end(),
                           [&](const McpUpstreamOptions& o) { return o.name == name; });
    if (eq == std::string::npos || it == servers.end()) {
      return InvalidArgument(
          "--mcp-server-approval needs NAME=MODE for a NAME given with "
          "--mcp-server, got \"" +
          text + "\"");
    }
    if (mode == "none") {
      it->approval = McpApproval::kNone;
    } else if (mode == "annotations") {
      it->approval = McpApproval::kAnnotations;
    } else if (mode == "all") {
      it->approval = McpApproval::kAll;
    } else {
      return InvalidArgument("--mcp-server-approval mode must be none, annotations or all, got \"" +
                             mode + "\"");
    }
  }
  return servers;
}

}  // namespace

StatusOr<std::shared_ptr<CodeActProvider>> BuildProvider(const Args& args,
                                                         ProviderChoices choices) {
  ProviderOptions options;
  if (Status s = LimitFlags(args, options.limits); !s.ok()) return s;
  if (Status s = CodeFlags(args, options); !s.ok()) return s;
  if (Status s = SessionFlags(args, options.sessions); !s.ok()) return s;
  if (Status s = ExecutorFlags(args, choices.default_pool_size, options.executor); !s.ok())
    return s;
  options.executor.validate_in_child = choices.validate_in_child;
  if (Status s = BackendFlags(args, options); !s.ok()) return s;
  auto mounts = MountFlags(args);
  if (!mounts.ok()) return mounts.status();
  std::vector<HostTool> tools;
  if (auto file = args.Get("--tools")) {
    auto loaded = LoadToolsFile(*file);
    if (!loaded.ok()) return loaded.status();
    tools = std::move(*loaded);
  }

  auto servers = McpServerFlags(args);
  if (!servers.ok()) return servers.status();
  // Refused before anything starts: a bad NAME should not cost an interpreter's start.
  for (const auto& server : *servers) {
    if (Status s = internal::CheckServerName(server.name); !s.ok())
      return InvalidArgument("--mcp-server: " + s.message());
  }

  auto provider =
      CodeActProvider::Create(std::move(options), nullptr, std::move(choices.validator));
  if (!provider.ok()) return provider.status();
  for (auto& m : *mounts) {
    if (Status s = (*provider)->AddMount(std::move(m)); !s.ok()) return s;
  }
  for (const auto& d : args.GetAll("--allow-domain")) (*provider)->AddNetworkTarget(d);
  if (choices.later_tools != nullptr) {
    *choices.later_tools = std::move(tools);
  } else if (Status s = AddHostTools(args, **provider, std::move(tools)); !s.ok()) {
    return s;
  }
  for (auto& server : *servers) {
    const std::string name = server.name;
    if (Status s = (*provider)->AddMcpServer(std::move(server)); !s.ok())
      return Status(s.code(), "--mcp-server " + name + ": " + s.message());
  }
  return *provider;
}

Status AddHostTools(const Args& args, CodeActProvider& provider, std::vector<HostTool> tools) {
  // A tool the code could not reach by its name (`sum`, `print`, `json` ...) is refused before
  // any code runs: exit 2 with the reason.
  if (tools.empty()) return Status::Ok();
  if (Status s = provider.AddTools(std::move(tools)); !s.ok()) {
    return InvalidArgument("tools file " + args.Get("--tools").value_or("") + ": " + s.message());
  }
  return Status::Ok();
}

}  // namespace codeact::cli
