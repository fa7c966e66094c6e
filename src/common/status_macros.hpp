// CODEACT_RETURN_IF_ERROR / CODEACT_ASSIGN_OR_RETURN: propagate a non-OK Status to the caller
// in one line, as abseil's status_macros.h does. The enclosing function returns a Status or a
// StatusOr<U> (a Status converts to either).
//
//   CODEACT_RETURN_IF_ERROR(SetNonBlocking(fd));
//   CODEACT_ASSIGN_OR_RETURN(UniqueFd fd, OpenFile(path));   // declares `fd`
//   CODEACT_ASSIGN_OR_RETURN(existing, Lookup(name));        // assigns to `existing`
//
// ASSIGN_OR_RETURN expands to more than one statement: do not use it as the sole body of an
// unbraced `if`.
//
// Internal (codeact::internal users only); the library's public API does not include it.
#pragma once

#include <utility>

#include "codeact/status.hpp"

#define CODEACT_RETURN_IF_ERROR(expr)                                        \
  do {                                                                       \
    if (::codeact::Status codeact_status_ = (expr); !codeact_status_.ok()) { \
      return codeact_status_;                                                \
    }                                                                        \
  } while (false)

#define CODEACT_ASSIGN_OR_RETURN(lhs, rexpr)                                                      \
  CODEACT_ASSIGN_OR_RETURN_IMPL_(CODEACT_STATUS_MACROS_CONCAT_(codeact_statusor_, __LINE__), lhs, \
                                 rexpr)

#define CODEACT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return statusor.status();              \
  lhs = std::move(statusor).value()

#define CODEACT_STATUS_MACROS_CONCAT_(x, y) CODEACT_STATUS_MACROS_CONCAT_INNER_(x, y)
#define CODEACT_STATUS_MACROS_CONCAT_INNER_(x, y) x##y
