#include "codeact/tool.hpp"

namespace codeact {

void ToolRegistry::Add(HostTool tool) {
  std::lock_guard lock(mu_);
  std::string name = tool.name;
  tools_.insert_or_assign(std::move(name), std::move(tool));
  ++version_;
}

void ToolRegistry::AddAll(std::vector<HostTool> tools) {
  std::lock_guard lock(mu_);
  for (auto& tool : tools) {
    std::string name = tool.name;
    tools_.insert_or_assign(std::move(name), std::move(tool));
  }
  if (!tools.empty()) ++version_;
}

std::size_t ToolRegistry::RemoveAll(const std::vector<std::string>& names) {
  std::lock_guard lock(mu_);
  std::size_t removed = 0;
  for (const auto& name : names) removed += tools_.erase(name);
  if (removed > 0) ++version_;
  return removed;
}

std::optional<HostTool> ToolRegistry::Get(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = tools_.find(name);
  if (it == tools_.end()) return std::nullopt;
  return it->second;
}

bool ToolRegistry::Remove(const std::string& name) {
  std::lock_guard lock(mu_);
  const bool removed = tools_.erase(name) > 0;
  if (removed) ++version_;
  return removed;
}

void ToolRegistry::ReplaceIf(const std::function<bool(const HostTool&)>& remove,
                             std::vector<HostTool> add) {
  std::lock_guard lock(mu_);
  bool changed = !add.empty();
  for (auto it = tools_.begin(); it != tools_.end();) {
    if (remove(it->second)) {
      it = tools_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  for (HostTool& tool : add) {
    std::string name = tool.name;
    tools_.insert_or_assign(std::move(name), std::move(tool));
  }
  if (changed) ++version_;
}

void ToolRegistry::Clear() {
  std::lock_guard lock(mu_);
  if (!tools_.empty()) ++version_;
  tools_.clear();
}

std::vector<HostTool> ToolRegistry::Snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<HostTool> out;
  out.reserve(tools_.size());
  for (const auto& [name, tool] : tools_) out.push_back(tool);
  return out;
}

std::uint64_t ToolRegistry::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

}  // namespace codeact
