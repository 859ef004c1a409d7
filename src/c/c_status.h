// Status codes and error messages at the C boundary (include/mxlimit/c.h):
// absl::Status to an `int`, a message to a malloc'd string, and the one
// wrapper that keeps C++ exceptions from crossing into a C caller.

#ifndef MXLIMIT_SRC_C_C_STATUS_H_
#define MXLIMIT_SRC_C_C_STATUS_H_

#include <exception>
#include <new>
#include <string_view>

#include "absl/status/status.h"
#include "mxlimit/c.h"

namespace mxlimit::c_api {

// The `mxlimit_status` of `status`: the canonical code's own number (c.h
// numbers them alike), MXLIMIT_EUNKNOWN for anything outside the set.
int StatusToCode(const absl::Status& status) noexcept;

// If `errmsg` is not NULL, stores a malloc'd, NUL-terminated copy of `message`
// in `*errmsg` (NULL when even that allocation fails). Never throws.
void SetErrorMessage(char** errmsg, std::string_view message) noexcept;

// StatusToCode(status), with its message stored as SetErrorMessage does.
int ReportStatus(const absl::Status& status, char** errmsg) noexcept;

// A bad argument (a NULL where the caller must pass something, bad options):
// MXLIMIT_EINVAL, with `message`, which names the function and the argument.
int ReportInvalidArgument(char** errmsg, std::string_view message) noexcept;

// Runs `body` (returning an `int` status) and turns any exception into a
// status: MXLIMIT_ENOMEM for std::bad_alloc, MXLIMIT_EINTERNAL for anything
// else, which would be a bug: the library reports failures as statuses.
template <typename Body>
int Guarded(char** errmsg, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    SetErrorMessage(errmsg, "mxlimit: out of memory");
    return MXLIMIT_ENOMEM;
  } catch (const std::exception& e) {
    SetErrorMessage(errmsg, e.what());
    return MXLIMIT_EINTERNAL;
  } catch (...) {
    SetErrorMessage(errmsg, "mxlimit: unexpected exception");
    return MXLIMIT_EINTERNAL;
  }
}

}  // namespace mxlimit::c_api

#endif  // MXLIMIT_SRC_C_C_STATUS_H_
