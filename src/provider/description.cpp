// What the agent reads: the instructions and the per-run execute_code description; the backend's
// part comes from its executor (BackendTraits).
#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "codeact/provider.hpp"
#include "json/definitions.hpp"
#include "limits/limit_table.hpp"

namespace codeact {
namespace {

void DescribeTool(std::ostringstream& out, const HostTool& tool) {
  auto params = internal::SchemaParams(tool.parameters_schema);
  std::string signature;
  std::string kwargs;
  if (params.ok()) {
    for (const auto& p : *params) {
      if (!signature.empty()) signature += ", ";
      signature += p.name + ": " + p.type + (p.required ? "" : " = None");
      if (!kwargs.empty()) kwargs += ", ";
      kwargs += p.name + "=...";
    }
  } else {
    signature = "**kwargs";
  }
  out << "- `" << tool.name << "(" << signature << ")` — "
      << (tool.description.empty() ? "(no description)" : tool.description)
      << (tool.requires_approval ? " [needs approval: name it in the code, and the run asks first]"
                                 : "")
      << "\n"
      << "  call: `await call_tool(\"" << tool.name << "\"" << (kwargs.empty() ? "" : ", " + kwargs)
      << ")`";
  const bool identifier =
      !tool.name.empty() && !std::isdigit(static_cast<unsigned char>(tool.name[0])) &&
      tool.name.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
  if (identifier) out << " or `await " << tool.name << "(" << kwargs << ")`";
  out << "\n";
  if (params.ok()) {
    for (const auto& p : *params) {
      if (!p.description.empty()) out << "    - " << p.name << ": " << p.description << "\n";
    }
  }
}

// An upstream tool's input schema longer than this is summarised by its parameters.
constexpr std::size_t kMaxUpstreamSchemaChars = 2000;

// An upstream MCP server's tool: its call form, the upstream name where it was normalised, and
// its input schema as the server gave it (the model may need more than the signature: enums,
// formats, nested objects).
void DescribeUpstreamTool(std::ostringstream& out, const HostTool& tool) {
  auto params = internal::SchemaParams(tool.parameters_schema);
  std::string kwargs;
  if (params.ok()) {
    for (const auto& p : *params) kwargs += (kwargs.empty() ? "" : ", ") + p.name + "=...";
  } else {
    kwargs = "**kwargs";
  }
  out << "- `await " << tool.name << "(" << kwargs << ")`";
  const std::string local = tool.name.substr(tool.name.find('.') + 1);
  if (!tool.upstream_name.empty() && tool.upstream_name != local)
    out << " (upstream name `" << tool.upstream_name << "`)";
  out << " — " << (tool.description.empty() ? "(no description)" : tool.description)
      << (tool.requires_approval ? " [needs approval: name it in the code, and the run asks first]"
                                 : "")
      << "\n";
  if (tool.parameters_schema.size() <= kMaxUpstreamSchemaChars) {
    out << "  input schema: " << tool.parameters_schema << "\n";
  } else if (params.ok()) {
    // A schema this large would crowd out everything else: its parameters instead.
    for (const auto& p : *params) {
      out << "    - " << p.name << ": " << p.type << (p.required ? "" : " (optional)")
          << (p.description.empty() ? "" : " — " + p.description) << "\n";
    }
  }
}

}  // namespace

std::string CodeActProvider::Instructions(bool tools_visible_to_model) const {
  // When the host tools are also the model's own tools, "only from inside the code" would be
  // false: the text then says the code may call them too.
  const char* tools =
      tools_visible_to_model
          ? "The host tools listed in its description can also be called from inside the code "
            "with `await call_tool(\"name\", arg=value)`, which is cheaper than one turn per "
            "call; "
          : "Host tools are reachable only from inside the code with `await "
            "call_tool(\"name\", arg=value)`; ";
  return std::string(
             "You can run Python code with the `execute_code` tool. Write one short program "
             "that does the whole task: combine steps in one call instead of calling the tool "
             "many times. ") +
         tools +
         "always `await` a tool call, check its result and catch `ToolError` where a call may "
         "fail. Print what you need to "
         "see — only stdout, stderr and the value of a final bare expression come back. "
         "Variables do not persist between calls (a session keeps its globals): pass values "
         "explicitly from one call to the next; files persist only in the working directory the "
         "tool's description names. If the result has violations, fix the code as the hints say "
         "and try again.";
}

namespace {

// "math, json, os (only os.environ and os.path), xml.*": the import patterns the runtime guard
// enforces, less the denials and `__future__`.
std::string ImportList(const std::vector<std::string>& patterns) {
  std::string out;
  for (const auto& p : patterns) {
    if (p.empty() || p[0] == '!' || p == "__future__") continue;
    if (!out.empty()) out += ", ";
    out += p;
    if (p == "os") out += " (only os.environ and os.path)";
  }
  return out;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The blocked builtins as the model reads them: without __build_class__, whose name would
// suggest that class statements fail (they work: the interpreter calls it, the code does not),
// and without getattr, hasattr and vars, which work in the forms the details name.
std::vector<std::string> ListedBuiltins(std::vector<std::string> names) {
  for (const char* usable : {"__build_class__", "getattr", "hasattr", "vars"}) {
    names.erase(std::remove(names.begin(), names.end(), usable), names.end());
  }
  return names;
}

// The read-write mount at the working directory (ProviderOptions::working_directory), if any.
const FileMount* WorkingDirectoryMount(const RunSnapshot& s) {
  for (const auto& m : s.mounts) {
    if (m.mount_path == kWorkingDirectoryMount && m.mode == MountMode::kReadWrite &&
        m.kind == MountKind::kDirectory) {
      return &m;
    }
  }
  return nullptr;
}

// Where the run starts and what of it persists. The namespaces level starts the run in /work
// (the working directory's mount when there is one); the process level starts it in a fresh
// scratch directory, and the working directory is its host path.
std::string WorkingDirectoryText(const RunSnapshot& s, const BackendTraits& traits) {
  const FileMount* work = WorkingDirectoryMount(s);
  if (work == nullptr) {
    return std::string("Working directory: ") +
           (traits.host_paths_visible ? "a fresh scratch directory"
                                      : std::string("`") + kWorkingDirectoryMount + "`, fresh") +
           " for each call: files written there are gone after it.\n";
  }
  if (traits.host_paths_visible) {
    return "Working directory: `" + work->host_path +
           "` (write it by that path; relative paths are a fresh scratch directory): files "
           "written there persist from call to call.\n";
  }
  return std::string("Working directory: `") + kWorkingDirectoryMount +
         "` (the run starts there): files written there persist from call to call.\n";
}

// What the validator allows: imports, builtins, the forms of code, the code's size.
void DescribeValidation(std::ostringstream& core, Validator& validator,
                        const ValidationPolicy& policy, bool site_packages) {
  if (auto imports = validator.AllowedImports(policy); imports.ok()) {
    core << "Imports allowed (" << (site_packages ? "" : "standard library, ")
         << "nothing else): " << ImportList(*imports) << ".\n";
  } else {
    core << "Imports: only what the validator's policy allows; a blocked one is a violation "
            "with a hint.\n";
  }
  auto blocked = validator.BlockedBuiltins(policy);
  if (blocked.ok() && policy.allowed_builtins) {
    // An allow-list: naming what is left is shorter than naming the ~150 blocked ones.
    std::vector<std::string> usable;
    for (const auto& b : *policy.allowed_builtins) {
      if (std::find(blocked->begin(), blocked->end(), b) == blocked->end()) usable.push_back(b);
    }
    core << "Builtins: only " << (usable.empty() ? std::string("none") : Joined(usable)) << ".\n";
  } else if (blocked.ok() && !ListedBuiltins(*blocked).empty()) {
    core << "Builtins: all except " << Joined(ListedBuiltins(*blocked)) << ".\n";
  }
  core << "Classes, dataclasses, Enum work. Dunder attributes (x.__class__) are refused but "
          "__name__, __doc__ and methods (__init__).\n";
  core << "Code: at most " << internal::BytesText(policy.max_code_bytes)
       << ", checked before it runs; rejected code comes back as `violations` with hints.\n";
}

// The host tools, then each upstream MCP server's ("server.tool") under its server's name.
void DescribeTools(std::ostringstream& out, const std::vector<HostTool>& tools) {
  std::vector<const HostTool*> upstream;  // "server.tool": an upstream MCP server's
  bool any_host_tool = false;
  for (const auto& tool : tools) {
    if (tool.name.find('.') != std::string::npos) {
      upstream.push_back(&tool);
    } else {
      if (!any_host_tool) out << "Host tools:\n";
      any_host_tool = true;
      DescribeTool(out, tool);
    }
  }
  if (!any_host_tool && upstream.empty()) out << "No host tools are available.\n";
  std::string server;
  for (const HostTool* tool : upstream) {
    const std::string name = tool->name.substr(0, tool->name.find('.'));
    if (name != server) {
      server = name;
      out << (out.tellp() > 0 ? "\n" : "") << "MCP server `" << server
          << "` (its tools take keyword arguments matching the "
          << "input schema and return its structured result, else its text; a failure raises "
          << "ToolError):\n";
    }
    DescribeUpstreamTool(out, *tool);
  }
}

// The working directory, the mounted files and the network the run may reach.
void DescribeFilesAndNetwork(std::ostringstream& out, const RunSnapshot& s,
                             const BackendTraits& traits) {
  out << "\n" << WorkingDirectoryText(s, traits);
  if (!s.mounts.empty() || !traits.files.empty()) out << "Files:\n";
  for (const auto& m : s.mounts) {
    const bool file = m.kind == MountKind::kFile;
    out << "- " << m.mount_path << " (" << (file ? "a single file, " : "")
        << (m.mode == MountMode::kReadOnly ? "read-only" : "read-write") << ")";
    out << ": use the path " << (traits.host_paths_visible ? m.host_path : m.mount_path);
    if (m.mode == MountMode::kReadWrite && file) {
      out << "; rewrite it in place (no rename or delete); when changed it is returned (up to "
          << internal::BytesText(m.write_bytes_limit) << ")";
    } else if (m.mode == MountMode::kReadWrite) {
      out << "; new or changed files are returned (up to "
          << internal::BytesText(m.write_bytes_limit) << "); a run may add at most "
          << internal::BytesText(m.disk_bytes_limit) << " and " << m.disk_files_limit
          << " files to it";
    }
    out << "\n";
  }
  out << traits.files;
  out << "\nNetwork: ";
  if (s.network_targets.empty() || !traits.network_targets) {
    out << "no network access is intended; do not rely on it.\n";
  } else if (!traits.network.empty()) {
    out << traits.network;
  } else {
    out << "only these hosts are reachable:";
    for (const auto& n : s.network_targets) out << " " << n.text;
    out << "\n";
  }
}

}  // namespace

ToolDescriptionParts CodeActProvider::DescribeRun(const RunSnapshot& s) const {
  const BackendTraits traits = executor_->Traits(s);
  const PythonVersion version = validator_->EmbeddedVersion();
  std::ostringstream core;
  core << "Run Python " << version.major << "." << version.minor << " code in a sandbox ("
       << BackendName(executor_->backend()) << " backend, " << IsolationName(executor_->isolation())
       << " isolation)." << (traits.isolation_meaning.empty() ? "" : " ")
       << traits.isolation_meaning
       << " Write one program that does the whole task. Top-level `await` works; the "
       << "value of a final bare expression is returned as `output`; print what you need to see."
       << "\n\n";
  if (options_.validate) {
    DescribeValidation(core, *validator_, s.policy, options_.executor.site_packages);
  }
  core
      << internal::LimitsForModel(s.limits) << "\n\n"
      << "Tools: call a host tool with `await name(arg=value)` or `await call_tool(\"name\", "
         "arg=value)` (keyword arguments only; `asyncio.gather` runs calls at once). It returns "
         "the JSON result as Python values; a failure raises ToolError (.error_type, "
         ".message).\n\n"
      << "Result fields: stdout, stderr, success, outcome (ok, error, validation_failed, timeout, "
      << "memory_limit, cpu_limit, output_limit, ...), exit_code, output, error {type, message, "
      << "traceback}, violations [{line, col, rule, message, hint}], files (written to rw mounts), "
      << "tool_calls.\n"
      << "State does not persist between calls: " << traits.fresh_start
      << " A session keeps its globals.\n";

  std::ostringstream out;
  if (options_.validate) {
    out << "Code forms: getattr(obj, \"name\", default) and hasattr(obj, \"name\") take a "
           "literal public name; vars(obj) and obj.__dict__ give a read-only copy of its public "
           "attributes; `import sys` is a read-only view (version, version_info, platform, "
           "maxsize, argv, stdout/stderr write and flush, getsizeof); a module that is not "
           "available may be imported in `try:` with an `except ImportError:` fallback.\n\n";
  }
  DescribeTools(out, s.tools);
  DescribeFilesAndNetwork(out, s, traits);
  return {core.str(), out.str()};
}

std::string CodeActProvider::ToolDescription(const RunSnapshot& s) const {
  ToolDescriptionParts parts = DescribeRun(s);
  return parts.core + "\n" + parts.details;
}

}  // namespace codeact
