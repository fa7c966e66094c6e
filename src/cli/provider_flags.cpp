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
#include "common/status_macros.hpp"
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

// The lists that replace a default: one flag, comma-separated ("" is the empty list).
Status ListFlag(const std::string& flag, const std::string& text,
                std::optional<std::vector<std::string>>& out) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    if (item.empty()) return InvalidArgument(flag + " needs NAME[,NAME...], got \"" + text + "\"");
    items.push_back(std::move(item));
    start = comma + 1;
  }
  out = std::move(items);
  return Status::Ok();
}

// What the provider flags set: the options, and what is added to the provider once it exists.
struct ProviderFlagValues {
  ProviderOptions options;
  std::optional<IsolationLevel> isolation;
  std::optional<IsolationLevel> required_isolation;
  std::vector<FileMount> mounts;
  std::map<std::string, std::string> mount_flags;  // normalised mount path -> the flag naming it
  std::optional<std::string> tools_file;
  std::vector<std::string> network_targets;
  std::int64_t mcp_call_timeout_ms = McpUpstreamOptions{}.call_timeout_ms;
  std::vector<McpUpstreamOptions> mcp_servers;
  std::vector<std::string> mcp_approvals;  // NAME=MODE, applied once every server is known
};

using V = ProviderFlagValues;
constexpr auto kLocal = FlagBackend::kLocal;
constexpr auto kHyperlight = FlagBackend::kHyperlight;
constexpr const char* kUseInputInstead =
    "; with --backend hyperlight use --input (read-only at /input) and files written under /output";

// A value flag of any backend.
Flag<V> Row(std::string name, std::string metavar, std::string default_text, std::string help,
            std::function<Status(const std::string&, V&)> set) {
  return {{std::move(name), std::move(metavar), std::move(default_text), std::move(help)},
          std::move(set)};
}
Flag<V> Repeated(Flag<V> row) {
  row.doc.repeatable = true;
  return row;
}
Flag<V> Of(FlagBackend backend, Flag<V> row, std::string instead = "") {
  row.doc.backend = backend;
  row.doc.instead = std::move(instead);
  return row;
}
Flag<V> Switch(std::string name, std::string help, std::function<void(V&)> set) {
  return {{std::move(name), "", "", std::move(help)}, [set](const std::string&, V& v) {
            set(v);
            return Status::Ok();
          }};
}

// The limit flags, one per row of the limit table that has a flag.
void AddLimitRows(FlagTable<V>& table) {
  const ExecutionLimits defaults;
  for (const auto& spec : internal::LimitTable()) {
    if (spec.flag.empty()) continue;
    const std::string flag(spec.flag);
    const std::string metavar = spec.flag_scale == 1000.0 || spec.unit == "s" ? "S" : "N";
    table.push_back(Row(flag, metavar,
                        NumberText(static_cast<double>(defaults.*spec.member) / spec.flag_scale),
                        std::string(spec.help), [&spec, flag](const std::string& text, V& v) {
                          auto value = PositiveNumber(flag, text, spec.flag_scale);
                          if (!value.ok()) return value.status();
                          // A fraction of a unit the kernel counts whole (RLIMIT_CPU seconds)
                          // rounds up, not to zero.
                          v.options.limits.*spec.member = std::max<std::int64_t>(*value, 1);
                          return Status::Ok();
                        }));
  }
}

// --env, --policy, the import and builtin lists, --workdir and --no-validate.
void AddCodeRows(FlagTable<V>& table) {
  table.push_back(Repeated(Row("--env", "K=V", "",
                               "a variable of the child's environment (nothing else is passed)",
                               [](const std::string& kv, V& v) {
                                 const auto eq = kv.find('=');
                                 if (eq == std::string::npos || eq == 0)
                                   return InvalidArgument("--env needs K=V, got \"" + kv + "\"");
                                 v.options.environment[kv.substr(0, eq)] = kv.substr(eq + 1);
                                 return Status::Ok();
                               })));
  // Before the lists and the single imports, which change the policy it replaces.
  table.push_back(Row("--policy", "FILE", "",
                      "validator policy as JSON lists (custom lists replace the defaults)",
                      [](const std::string& file, V& v) {
                        auto text = ReadInput(file, internal::kMaxConfigFileBytes, "policy file");
                        if (!text.ok()) return text.status();
                        auto policy = PolicyFromJson(*text);
                        if (!policy.ok())
                          return InvalidArgument(file + ": " + policy.status().message());
                        v.options.policy = std::move(*policy);
                        return Status::Ok();
                      }));
  table.push_back(Row("--allowed-imports", "LIST", "",
                      "the import allow-list, comma-separated, replacing the default",
                      [](const std::string& text, V& v) {
                        return ListFlag("--allowed-imports", text,
                                        v.options.policy.allowed_imports);
                      }));
  table.push_back(Row("--blocked-imports", "LIST", "",
                      "the default block list replaced (blocked under a parent or wildcard entry; "
                      "an exact allow entry beats it)",
                      [](const std::string& text, V& v) {
                        return ListFlag("--blocked-imports", text,
                                        v.options.policy.blocked_imports);
                      }));
  table.push_back(Row("--allowed-builtins", "LIST", "",
                      "only these builtins, comma-separated (the blocked ones stay blocked)",
                      [](const std::string& text, V& v) {
                        return ListFlag("--allowed-builtins", text,
                                        v.options.policy.allowed_builtins);
                      }));
  table.push_back(Of(kLocal,
                     Row("--workdir", "DIR", "",
                         "a host directory as the code's working files: read-write at /work",
                         [](const std::string& dir, V& v) {
                           v.options.working_directory = dir;
                           return Status::Ok();
                         }),
                     kUseInputInstead));
  table.push_back(Repeated(
      Row("--allow-import", "M", "", "allow one more module", [](const std::string& m, V& v) {
        v.options.policy.extra_allowed_imports.push_back(m);
        return Status::Ok();
      })));
  table.push_back(
      Repeated(Row("--block-import", "M", "", "block a module", [](const std::string& m, V& v) {
        v.options.policy.extra_blocked_imports.push_back(m);
        return Status::Ok();
      })));
  table.push_back(Switch("--no-validate", "skip the validator (trusted code only)",
                         [](V& v) { v.options.validate = false; }));
  // Read by the command that makes the calls (InvokeOptions::approved).
  table.push_back(Switch("--approve", "approve runs that need approval", [](V&) {}));
}

// --session-idle-expiry, --max-sessions and --sessions-memory-mb.
void AddSessionRows(FlagTable<V>& table) {
  const SessionSettings defaults;
  table.push_back(Row("--session-idle-expiry", "S",
                      NumberText(static_cast<double>(defaults.idle_expiry_ms) / 1000.0),
                      "sessions (mcp, repl): close one unused this long",
                      [](const std::string& text, V& v) {
                        auto ms = PositiveNumber("--session-idle-expiry", text, 1000.0);
                        if (!ms.ok()) return ms.status();
                        v.options.sessions.idle_expiry_ms = std::max<std::int64_t>(*ms, 1);
                        return Status::Ok();
                      }));
  table.push_back(Row("--max-sessions", "N", std::to_string(defaults.max_sessions),
                      "sessions open at once; one more is refused",
                      [](const std::string& text, V& v) {
                        auto n = PositiveNumber("--max-sessions", text, 1.0);
                        if (!n.ok()) return n.status();
                        if (*n < 1 || *n > 4096)
                          return InvalidArgument("--max-sessions must be from 1 to 4096");
                        v.options.sessions.max_sessions = static_cast<int>(*n);
                        return Status::Ok();
                      }));
  table.push_back(Row("--sessions-memory-mb", "N",
                      std::to_string(defaults.total_memory_bytes >> 20),
                      "the memory of all sessions together", [](const std::string& text, V& v) {
                        auto bytes = PositiveNumber("--sessions-memory-mb", text, 1024.0 * 1024.0);
                        if (!bytes.ok()) return bytes.status();
                        v.options.sessions.total_memory_bytes = *bytes;
                        return Status::Ok();
                      }));
}

Status PoolSize(const std::string& flag, const std::string& text, V& v) {
  int size = -1;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
  if (ec != std::errc() || ptr != text.data() + text.size() || size < 0 || size > 64) {
    return InvalidArgument(flag + " needs an integer from 0 to 64, got \"" + text + "\"");
  }
  v.options.executor.warm_pool_size = size;
  return Status::Ok();
}

// The executor's options that are flags of their own.
void AddExecutorRows(FlagTable<V>& table) {
  table.push_back(Row("--python", "PATH", "the embedded validator's installation",
                      "child interpreter", [](const std::string& path, V& v) {
                        v.options.executor.python_path = path;
                        return Status::Ok();
                      }));
  const RunUidRange uids;
  table.push_back(Of(kLocal, Row("--run-as-uids", "FIRST[:COUNT]",
                                 std::to_string(uids.first) + ":" + std::to_string(uids.count),
                                 "a root host's per-run uids", [](const std::string& text, V& v) {
                                   auto range = RunUidsFlag(text);
                                   if (!range.ok()) return range.status();
                                   v.options.executor.run_uids = *range;
                                   return Status::Ok();
                                 })));
  table.push_back(Of(
      kLocal,
      Switch("--site-packages", "let the code import installed third-party packages (slower start)",
             [](V& v) { v.options.executor.site_packages = true; })));
  table.push_back(
      Of(kLocal, Switch("--accept-weaker-limits",
                        "where no cgroup can be made for runs, apply explicit --memory-mb and "
                        "--max-processes as rlimits alone instead of refusing them",
                        [](V& v) { v.options.executor.accept_weaker_limits = true; })));
  // --warm-pool: the older name of --pool (its row first, so that --pool wins).
  Flag<V> warm_pool = Of(kLocal, Row("--warm-pool", "N", "", "", [](const std::string& text, V& v) {
                           return PoolSize("--warm-pool", text, v);
                         }));
  warm_pool.doc.hidden = true;
  table.push_back(std::move(warm_pool));
  table.push_back(
      Of(kLocal, Row("--pool", "N", "2 for mcp and serve, 0 for run, describe and repl",
                     "interpreters kept started ahead of time, each used for one run (0 turns the "
                     "pool off; --warm-pool N too)",
                     [](const std::string& text, V& v) { return PoolSize("--pool", text, v); })));
  Flag<V> isolation =
      Of(kLocal,
         Row("--isolation", "L", "auto",
             "auto (namespaces where the kernel allows it, else process), process "
             "or namespaces (an explicit level runs as asked or not at all)",
             [](const std::string& text, V& v) {
               CODEACT_ASSIGN_OR_RETURN(v.isolation, ParseIsolation("--isolation", text));
               return Status::Ok();
             }),
         "; hyperlight always runs in a micro-VM");
  isolation.doc.any_backend_value = "auto";  // the backend's own level, whichever it is
  table.push_back(std::move(isolation));
  table.push_back(Row("--require-isolation", "L", "",
                      "fail unless the level that runs is at least L (process < namespaces)",
                      [](const std::string& text, V& v) {
                        CODEACT_ASSIGN_OR_RETURN(v.required_isolation,
                                                 ParseIsolation("--require-isolation", text));
                        return Status::Ok();
                      }));
}

// The hyperlight backend's flags, and the network targets both backends take.
void AddBackendRows(FlagTable<V>& table) {
  for (const char* flag : {"--input", "--input-dir"}) {  // --input-dir: the older name
    Flag<V> input = Of(
        kHyperlight,
        Repeated(Row(
            flag, "PATH", "",
            "a host directory (its files) or file the code reads at /input/NAME (read-only, flat; "
            "--input-dir too); staged as a private copy, again whenever the contents change",
            [flag](const std::string& path, V& v) {
              if (path.empty()) return InvalidArgument(std::string(flag) + " needs a path");
              v.options.executor.hyperlight.inputs.push_back(path);
              return Status::Ok();
            })));
    input.doc.hidden = std::string_view(flag) == "--input-dir";
    table.push_back(std::move(input));
  }
  table.push_back(Of(
      kHyperlight,
      Row("--output-wait-ms", "N", std::to_string(HyperlightOptions{}.output_wait_ms),
          "wait N ms after each run before reading /output, for files written late (at most " +
              std::to_string(HyperlightOptions::kMaxOutputWaitMs) + ")",
          [](const std::string& wait, V& v) {
            std::int64_t ms = -1;
            const auto [ptr, ec] = std::from_chars(wait.data(), wait.data() + wait.size(), ms);
            if (ec != std::errc() || ptr != wait.data() + wait.size() || ms < 0 ||
                ms > HyperlightOptions::kMaxOutputWaitMs) {
              return InvalidArgument(
                  "--output-wait-ms needs a whole number of milliseconds from 0 to " +
                  std::to_string(HyperlightOptions::kMaxOutputWaitMs) + ", got \"" + wait + "\"");
            }
            v.options.executor.hyperlight.output_wait_ms = ms;
            return Status::Ok();
          })));
  table.push_back(Of(kHyperlight, Row("--hyperlight-sdk", "DIR", "",
                                      "import hyperlight_sandbox from DIR first (tests use a fake)",
                                      [](const std::string& dir, V& v) {
                                        v.options.executor.hyperlight.sdk_path = dir;
                                        return Status::Ok();
                                      })));
  // Both backends have egress (the guest's SDK, the local backend's host tools): one grammar,
  // checked here so that a typo is exit 2 before anything starts.
  table.push_back(Repeated(
      Row("--allow-domain", "TARGET[:METHODS]", "none",
          "a network target the code may reach (hyperlight: from the guest; local: through the "
          "host tools http_get, http_post and http_request): https://HOST[:PORT], "
          "http://HOST[:PORT] or HOST (https, port 443), e.g. api.example.com:GET,POST",
          [](const std::string& d, V& v) {
            if (auto target = internal::ParseEgressTarget(d); !target.ok()) {
              return InvalidArgument("--allow-domain: " + target.status().message());
            }
            v.network_targets.push_back(d);
            return Status::Ok();
          })));
}

// --mount, --tools and the upstream MCP servers.
void AddResourceRows(FlagTable<V>& table) {
  table.push_back(
      Of(kLocal,
         Repeated(Row(
             "--mount", "HOST:MOUNT[:ro|:rw]", "rw",
             "a host directory, or a single host file, the code may use; a file's MOUNT names the "
             "file itself, e.g. --mount ./config.json:/data/config.json:ro; rw,max=64M,files=10000 "
             "bounds what a run may add to a directory (default 256M, 65536 files)",
             [](const std::string& text, V& v) {
               auto mount = ParseMount(text);
               if (!mount.ok()) return mount.status();
               // The registry keys mounts by path, so a second one would silently replace the
               // first.
               const std::string key = NormaliseMountPath(mount->mount_path).value();
               if (auto [it, fresh] = v.mount_flags.emplace(key, text); !fresh) {
                 return InvalidArgument("--mount \"" + text + "\" uses the mount path " + key +
                                        " of --mount \"" + it->second + "\" again");
               }
               v.mounts.push_back(std::move(*mount));
               return Status::Ok();
             })),
         kUseInputInstead));
  table.push_back(Row("--tools", "FILE", "",
                      "host tools as commands (see include/codeact/command_tool.hpp)",
                      [](const std::string& file, V& v) {
                        v.tools_file = file;
                        return Status::Ok();
                      }));
  table.push_back(
      Row("--mcp-call-timeout", "S",
          NumberText(static_cast<double>(McpUpstreamOptions{}.call_timeout_ms) / 1000.0),
          "one upstream tool call's limit", [](const std::string& t, V& v) {
            auto ms = PositiveNumber("--mcp-call-timeout", t, 1000.0);
            if (!ms.ok()) return ms.status();
            v.mcp_call_timeout_ms = *ms;
            return Status::Ok();
          }));
  table.push_back(Repeated(Row(
      "--mcp-server", "NAME=COMMAND", "",
      "an upstream MCP server (stdio) whose tools the code calls as `await NAME.tool(...)`. "
      "COMMAND is split into words like a shell would ('...', \"...\", \\ escapes) but no shell "
      "runs it: no $VAR, globs or redirections. e.g. --mcp-server 'fs=npx server-fs /data'",
      [](const std::string& text, V& v) {
        const auto eq = text.find('=');
        if (eq == std::string::npos || eq == 0)
          return InvalidArgument("--mcp-server needs NAME=COMMAND, got \"" + text + "\"");
        McpUpstreamOptions server;
        server.name = text.substr(0, eq);
        auto words = SplitCommandLine(text.substr(eq + 1));
        if (!words.ok())
          return InvalidArgument("--mcp-server " + server.name + ": " + words.status().message());
        server.command = std::move(*words);
        for (const auto& other : v.mcp_servers) {
          if (other.name == server.name)
            return InvalidArgument("--mcp-server " + server.name + " is given twice");
        }
        v.mcp_servers.push_back(std::move(server));
        return Status::Ok();
      })));
  table.push_back(Repeated(Row("--mcp-server-approval", "NAME=MODE", "none",
                               "which tools of server NAME need approval: none, annotations (all "
                               "but those annotated readOnlyHint or not destructiveHint) or all",
                               [](const std::string& text, V& v) {
                                 v.mcp_approvals.push_back(text);
                                 return Status::Ok();
                               })));
}

const FlagTable<V>& ProviderFlagTable() {
  static const FlagTable<V> table = [] {
    FlagTable<V> t;
    t.push_back(Row(
        "--backend", "local|hyperlight", "local", "where the code runs (hyperlight: a micro-VM)",
        [](const std::string& backend, V& v) {
          if (backend == "local") {
            v.options.executor.backend = BackendKind::kLocal;
          } else if (backend == "hyperlight") {
            v.options.executor.backend = BackendKind::kHyperlight;
          } else {
            return InvalidArgument("--backend needs local or hyperlight, got \"" + backend + "\"");
          }
          return Status::Ok();
        }));
    AddLimitRows(t);
    AddCodeRows(t);
    AddSessionRows(t);
    AddExecutorRows(t);
    AddBackendRows(t);
    AddResourceRows(t);
    return t;
  }();
  return table;
}

// --isolation and --require-isolation as one level for the executor.
StatusOr<IsolationLevel> IsolationLevelOf(const V& v) {
  IsolationLevel level = v.isolation.value_or(IsolationLevel::kAuto);
  if (v.required_isolation == IsolationLevel::kNamespaces) {
    if (level == IsolationLevel::kProcess) {
      return InvalidArgument("--isolation process contradicts --require-isolation namespaces");
    }
    level = IsolationLevel::kNamespaces;
  }
  return level;
}

// The --mcp-server-approval values, for the servers --mcp-server named.
Status ApplyMcpApprovals(V& v) {
  for (auto& server : v.mcp_servers) server.call_timeout_ms = v.mcp_call_timeout_ms;
  for (const auto& text : v.mcp_approvals) {
    const auto eq = text.find('=');
    const std::string name = text.substr(0, eq);
    const std::string mode = eq == std::string::npos ? "" : text.substr(eq + 1);
    auto it = std::find_if(v.mcp_servers.begin(), v.mcp_servers.end(),
                           [&](const McpUpstreamOptions& o) { return o.name == name; });
    if (eq == std::string::npos || it == v.mcp_servers.end()) {
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
  // Refused before anything starts: a bad NAME should not cost an interpreter's start.
  for (const auto& server : v.mcp_servers) {
    if (Status s = internal::CheckServerName(server.name); !s.ok())
      return InvalidArgument("--mcp-server: " + s.message());
  }
  return Status::Ok();
}

// The flags given, applied: the backend first, so that another backend's flags are refused
// before their values are read.
Status ApplyProviderFlags(const Args& args, V& v) {
  const FlagTable<V>& table = ProviderFlagTable();
  if (Status s = ApplyFlags(FlagTable<V>(table.begin(), table.begin() + 1), args, v); !s.ok())
    return s;
  const FlagBackend backend =
      v.options.executor.backend == BackendKind::kLocal ? kLocal : kHyperlight;
  if (Status s = RefuseOtherBackend(DocsOf(table), args, backend); !s.ok()) return s;
  if (Status s = ApplyFlags(FlagTable<V>(table.begin() + 1, table.end()), args, v); !s.ok())
    return s;
  auto isolation = IsolationLevelOf(v);
  if (!isolation.ok()) return isolation.status();
  v.options.executor.isolation = *isolation;
  // A micro-VM is the strongest level there is: --require-isolation is met.
  if (backend == kHyperlight) v.options.executor.isolation = IsolationLevel::kAuto;
  return ApplyMcpApprovals(v);
}

}  // namespace

std::vector<FlagDoc> ProviderFlagDocs() { return DocsOf(ProviderFlagTable()); }

std::string ProviderFlagsHelp() {
  static const std::string help = FlagsHelp(ProviderFlagDocs());
  return help;
}

FlagSpec WithProviderFlags(FlagSpec spec) {
  AddToSpec(ProviderFlagDocs(), spec);
  return spec;
}

StatusOr<IsolationLevel> ParseIsolation(const std::string& flag, const std::string& text) {
  for (IsolationLevel level :
       {IsolationLevel::kAuto, IsolationLevel::kProcess, IsolationLevel::kNamespaces}) {
    if (text == IsolationName(level)) return level;
  }
  return InvalidArgument(flag + " must be auto, process or namespaces, got \"" + text + "\"");
}

StatusOr<std::shared_ptr<CodeActProvider>> BuildProvider(const Args& args,
                                                         ProviderChoices choices) {
  ProviderFlagValues v;
  v.options.executor.warm_pool_size = choices.default_pool_size;
  v.options.executor.validate_in_child = choices.validate_in_child;
  if (Status s = ApplyProviderFlags(args, v); !s.ok()) return s;
  std::vector<HostTool> tools;
  if (v.tools_file) {
    auto loaded = LoadToolsFile(*v.tools_file);
    if (!loaded.ok()) return loaded.status();
    tools = std::move(*loaded);
  }

  auto provider =
      CodeActProvider::Create(std::move(v.options), nullptr, std::move(choices.validator));
  if (!provider.ok()) return provider.status();
  for (auto& m : v.mounts) {
    if (Status s = (*provider)->AddMount(std::move(m)); !s.ok()) return s;
  }
  for (const auto& d : v.network_targets) {
    if (Status s = (*provider)->AddNetworkTarget(d); !s.ok()) return s;
  }
  if (choices.later_tools != nullptr) {
    *choices.later_tools = std::move(tools);
  } else if (Status s = AddHostTools(args, **provider, std::move(tools)); !s.ok()) {
    return s;
  }
  for (auto& server : v.mcp_servers) {
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
