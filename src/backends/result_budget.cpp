#include "backends/result_budget.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "files/mount_capture.hpp"
#include "json/result_size.hpp"
#include "os/path_within.hpp"

namespace codeact::internal {
namespace {

// The smallest budget taken; CheckLimits refuses less than 64 KiB before a run.
constexpr std::int64_t kSmallestBudget = 4 << 10;
// Room kept for the note on what was cut (at most ~230 bytes of ASCII, and "; ").
constexpr std::size_t kNoteBytes = 320;

struct Cuts {
  std::int64_t files_omitted = 0;
  bool output_dropped = false;
  bool stdout_cut = false;
  bool stderr_cut = false;
  bool omitted_collapsed = false;
  bool error_cut = false;
  bool message_cut = false;
  std::int64_t violations_dropped = 0;
};

// The mount a reported path belongs to (the longest mount path holding it), else its first
// component: what a summary entry is named after.
std::string MountPathOf(const std::string& path, const std::vector<FileMount>& mounts) {
  const FileMount* best = nullptr;
  for (const FileMount& m : mounts) {
    if (PathWithin(path, m.mount_path) &&
        (best == nullptr || m.mount_path.size() > best->mount_path.size()))
      best = &m;
  }
  if (best != nullptr) return best->mount_path;
  const std::size_t slash = path.find('/', 1);
  return slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

// A summary entry made by OmissionList.
bool IsSummary(const OmittedFile& f) {
  return f.path.ends_with("\u2026") && f.reason.starts_with("and ") &&
         f.reason.find(" omitted: ") != std::string::npos;
}

// Cuts `text` to its longest start, at a character boundary, whose JSON takes at most
// max_json_bytes (at least 2: the quotes). True when it was cut.
bool CutText(std::string& text, std::size_t max_json_bytes) {
  max_json_bytes = std::max<std::size_t>(max_json_bytes, 2);
  if (JsonTextBytes(text) <= max_json_bytes) return false;
  // The start of the character at k: back over at most three continuation bytes.
  const auto boundary = [&text](std::size_t k) {
    const auto continuation = [&text](std::size_t i) {
      return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
    };
    for (int back = 0; back < 3 && k > 0 && continuation(k); ++back) --k;
    return k;
  };
  // A start of `lo` bytes fits (at most 6 JSON bytes a byte); one of `hi` or more does not.
  std::size_t lo = std::min((max_json_bytes - 2) / 6, text.size());
  std::size_t hi = std::min(max_json_bytes - 1, text.size());
  while (hi > lo + 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (JsonTextBytes(std::string_view(text).substr(0, boundary(mid))) <= max_json_bytes) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  text.resize(boundary(lo));
  return true;
}

std::string Reason(std::int64_t max_result_bytes) {
  return "result size limit of " + std::to_string(max_result_bytes) + " bytes reached";
}

// Step 1. Returns the result's size afterwards, or more (a summary counted at its largest).
std::size_t OmitFiles(ExecutionResult& r, std::size_t size, std::size_t target,
                      std::int64_t max_result_bytes, const std::vector<FileMount>& mounts,
                      Cuts& cuts) {
  const std::size_t n = r.files.size();
  std::vector<std::pair<std::size_t, std::size_t>> order;  // (JSON bytes, index)
  order.reserve(n);
  for (std::size_t i = 0; i < n; ++i) order.emplace_back(CapturedFileJsonBytes(r.files[i]), i);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });

  const std::string reason = Reason(max_result_bytes);
  const std::size_t max_listed = CaptureLimits().max_listed_omissions;
  std::size_t entries = r.omitted_files.size();
  OmissionList omitted(max_listed > entries ? max_listed - entries : 0);
  std::vector<std::string> summarised;  // mounts whose summary is counted in `size`
  // Listing an omitted file costs its path again: long paths would eat the room being made.
  std::size_t listing_left = static_cast<std::size_t>(max_result_bytes) / 16;
  std::vector<bool> dropped(n, false);
  std::size_t kept = n;
  for (const auto& [bytes, i] : order) {
    if (size <= target) break;
    dropped[i] = true;
    --kept;
    size -= bytes + (kept > 0 ? 1 : 0);  // and its comma
    ++cuts.files_omitted;
    if (!omitted.full()) {
      OmittedFile entry{r.files[i].path, reason};
      const std::size_t entry_bytes = OmittedFileJsonBytes(entry) + 1;
      if (entry_bytes <= listing_left) {
        listing_left -= entry_bytes;
        size += entry_bytes - (entries++ > 0 ? 0 : 1);
        omitted.List(std::move(entry));
        continue;
      }
    }
    std::string mount = MountPathOf(r.files[i].path, mounts);
    if (std::find(summarised.begin(), summarised.end(), mount) == summarised.end()) {
      const OmittedFile largest =
          OmissionSummary(mount, static_cast<std::int64_t>(n), {reason}, false);
      size += OmittedFileJsonBytes(largest) + (entries++ > 0 ? 1 : 0);
      summarised.push_back(mount);
    }
    omitted.Count(mount, reason);
  }
  std::size_t next = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (dropped[i]) continue;
    if (next != i) r.files[next] = std::move(r.files[i]);
    ++next;
  }
  r.files.resize(next);
  for (OmittedFile& f : omitted.Take()) r.omitted_files.push_back(std::move(f));
  std::stable_sort(r.omitted_files.begin(), r.omitted_files.end(),
                   [](const OmittedFile& a, const OmittedFile& b) { return a.path < b.path; });
  return size;
}

// Step 2. Returns the result's size afterwards.
std::size_t CutStreamsAndOutput(ExecutionResult& r, std::size_t target, Cuts& cuts) {
  std::size_t size = ResultJsonBytes(r);
  const std::size_t out_bytes = JsonTextBytes(r.stdout_text) - 2;  // beyond the quotes
  const std::size_t err_bytes = JsonTextBytes(r.stderr_text) - 2;
  std::size_t rest = size - out_bytes - err_bytes;  // the result with both streams empty
  if (rest > target && r.output_present) {
    r.output_present = false;
    r.output_json = "null";
    cuts.output_dropped = true;
    size = ResultJsonBytes(r);
    rest = size - out_bytes - err_bytes;
  }
  if (size <= target) return size;
  // Half the room each, or what a stream needs when that is less; the other takes the rest.
  const std::size_t room = rest < target ? target - rest : 0;
  std::size_t out_room = room / 2;
  std::size_t err_room = room - out_room;
  if (out_bytes < out_room) {
    err_room += out_room - out_bytes;
    out_room = out_bytes;
  } else if (err_bytes < err_room) {
    out_room += err_room - err_bytes;
    err_room = err_bytes;
  }
  if (CutText(r.stdout_text, out_room + 2)) r.stdout_truncated = cuts.stdout_cut = true;
  if (CutText(r.stderr_text, err_room + 2)) r.stderr_truncated = cuts.stderr_cut = true;
  return ResultJsonBytes(r);
}

// Step 3, for budgets below what the rest of the result takes. Returns the size afterwards.
std::size_t CutTheRest(ExecutionResult& r, std::size_t target, const std::vector<FileMount>& mounts,
                       Cuts& cuts) {
  std::size_t size = ResultJsonBytes(r);
  if (size > target && !r.omitted_files.empty()) {
    OmissionList collapsed(0);
    std::vector<OmittedFile> kept;
    for (OmittedFile& f : r.omitted_files) {
      if (IsSummary(f)) {
        kept.push_back(std::move(f));
      } else {
        collapsed.Count(MountPathOf(f.path, mounts), f.reason);
        cuts.omitted_collapsed = true;
      }
    }
    for (OmittedFile& f : collapsed.Take()) kept.push_back(std::move(f));
    r.omitted_files = std::move(kept);
    std::stable_sort(r.omitted_files.begin(), r.omitted_files.end(),
                     [](const OmittedFile& a, const OmittedFile& b) { return a.path < b.path; });
    size = ResultJsonBytes(r);
  }
  // Each text by what is still too much, longest kept longest.
  const auto cut = [&](std::string& text, bool& flag) {
    if (size <= target) return;
    const std::size_t bytes = JsonTextBytes(text);
    const std::size_t excess = size - target;
    if (CutText(text, bytes > excess ? bytes - excess : 2)) flag = true;
    size = ResultJsonBytes(r);
  };
  if (r.error) {
    cut(r.error->traceback, cuts.error_cut);
    cut(r.error->message, cuts.error_cut);
  }
  cut(r.message, cuts.message_cut);
  if (r.error) cut(r.error->type, cuts.error_cut);
  while (size > target && !r.violations.empty()) {
    size -= ViolationJsonBytes(r.violations.back()) + (r.violations.size() > 1 ? 1 : 0);
    r.violations.pop_back();
    ++cuts.violations_dropped;
  }
  return size;
}

std::string Note(std::int64_t max_result_bytes, const Cuts& cuts) {
  std::string note = Reason(max_result_bytes);
  bool first = true;
  const auto add = [&](const std::string& part) {
    note += first ? ": " : ", ";
    note += part;
    first = false;
  };
  if (cuts.files_omitted > 0) {
    add(std::to_string(cuts.files_omitted) +
        (cuts.files_omitted == 1 ? " captured file" : " captured files") + " omitted");
  }
  if (cuts.output_dropped) add("output dropped");
  if (cuts.stdout_cut) add("stdout cut");
  if (cuts.stderr_cut) add("stderr cut");
  if (cuts.omitted_collapsed) add("omitted files summarised");
  if (cuts.error_cut) add("error text cut");
  if (cuts.message_cut) add("message cut");
  if (cuts.violations_dropped > 0)
    add(std::to_string(cuts.violations_dropped) + " violations dropped");
  return note;
}

}  // namespace

void FitResult(ExecutionResult& r, std::int64_t max_result_bytes,
               const std::vector<FileMount>& mounts) {
  max_result_bytes = std::max(max_result_bytes, kSmallestBudget);
  const std::size_t limit = static_cast<std::size_t>(max_result_bytes) - kResultBookkeepingBytes;
  if (ResultJsonBytesUpperBound(r) <= limit) return;
  std::size_t size = ResultJsonBytes(r);
  if (size <= limit) return;

  const std::size_t target = limit - kNoteBytes;
  Cuts cuts;
  if (!r.files.empty()) size = OmitFiles(r, size, target, max_result_bytes, mounts, cuts);
  if (size > target) size = CutStreamsAndOutput(r, target, cuts);
  if (size > target) CutTheRest(r, target, mounts, cuts);
  const std::string note = Note(max_result_bytes, cuts);
  r.message = r.message.empty() ? note : r.message + "; " + note;

  if (ResultJsonBytes(r) > limit) {
    // Unreachable by the accounting above; kept so that the bound holds whatever a future field
    // adds: only the fixed fields and the note remain.
    r.stdout_text.clear();
    r.stderr_text.clear();
    r.stdout_truncated = r.stderr_truncated = true;
    r.output_present = false;
    r.output_json = "null";
    r.files.clear();
    r.omitted_files.clear();
    r.violations.clear();
    if (r.error) r.error = UserError{"", "", ""};
    r.message = note;
  }
}

}  // namespace codeact::internal
