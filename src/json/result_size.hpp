// Sizes of the pieces of the result JSON (ToJson(ExecutionResult)), so that a result can be
// fitted to a byte budget without serialising it whole again and again. Exact unless the name
// says "upper bound".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "codeact/execution.hpp"

namespace codeact::internal {

// A text field as serialised (invalid UTF-8 replaced, escaped), quotes included.
std::size_t JsonTextBytes(std::string_view text);
// At most 6 bytes a byte ("\u0001"; an invalid byte becomes 3), plus the quotes.
std::size_t JsonTextBytesUpperBound(std::size_t text_bytes);

// One element of "files": {"path","media_type","size","data_base64"}, for a file of data_bytes.
std::size_t CapturedFileJsonBytes(std::string_view path, std::string_view media_type,
                                  std::int64_t size, std::size_t data_bytes);
std::size_t CapturedFileJsonBytes(const CapturedFile& file);
// One element of "omitted_files".
std::size_t OmittedFileJsonBytes(const OmittedFile& file);
// One element of "violations".
std::size_t ViolationJsonBytes(const Violation& violation);
// The value of "output" (4 for null).
std::size_t OutputJsonBytes(const ExecutionResult& result);

// ToJson(result).size(), computed piece by piece.
std::size_t ResultJsonBytes(const ExecutionResult& result);
// At least ResultJsonBytes(result), from the fields' lengths alone: cheap, for ordinary results
// far below a budget.
std::size_t ResultJsonBytesUpperBound(const ExecutionResult& result);

}  // namespace codeact::internal
