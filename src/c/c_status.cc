#include "src/c/c_status.h"

#include <cstdlib>
#include <cstring>

namespace mxlimit::c_api {

namespace {

// By code, 0 to 16; c.h gives the enumerators the canonical numbers.
constexpr const char* kStatusNames[] = {
    "MXLIMIT_OK",
    "MXLIMIT_ECANCELLED",
    "MXLIMIT_EUNKNOWN",
    "MXLIMIT_EINVAL",
    "MXLIMIT_EDEADLINE",
    "MXLIMIT_ENOTFOUND",
    "MXLIMIT_EEXIST",
    "MXLIMIT_EPERM",
    "MXLIMIT_ENOMEM",
    "MXLIMIT_EPRECONDITION",
    "MXLIMIT_EABORTED",
    "MXLIMIT_ERANGE",
    "MXLIMIT_EUNIMPLEMENTED",
    "MXLIMIT_EINTERNAL",
    "MXLIMIT_EUNAVAILABLE",
    "MXLIMIT_EDATALOSS",
    "MXLIMIT_EUNAUTHENTICATED",
};
constexpr int kStatusCount = sizeof(kStatusNames) / sizeof(kStatusNames[0]);

static_assert(MXLIMIT_EINVAL ==
              static_cast<int>(absl::StatusCode::kInvalidArgument));
static_assert(MXLIMIT_ENOTFOUND ==
              static_cast<int>(absl::StatusCode::kNotFound));
static_assert(MXLIMIT_EPERM ==
              static_cast<int>(absl::StatusCode::kPermissionDenied));
static_assert(MXLIMIT_ENOMEM ==
              static_cast<int>(absl::StatusCode::kResourceExhausted));
static_assert(MXLIMIT_EPRECONDITION ==
              static_cast<int>(absl::StatusCode::kFailedPrecondition));
static_assert(MXLIMIT_ERANGE ==
              static_cast<int>(absl::StatusCode::kOutOfRange));
static_assert(MXLIMIT_EINTERNAL ==
              static_cast<int>(absl::StatusCode::kInternal));
static_assert(MXLIMIT_EUNAVAILABLE ==
              static_cast<int>(absl::StatusCode::kUnavailable));
static_assert(MXLIMIT_EUNAUTHENTICATED ==
              static_cast<int>(absl::StatusCode::kUnauthenticated));
static_assert(kStatusCount == MXLIMIT_EUNAUTHENTICATED + 1);

}  // namespace

int StatusToCode(const absl::Status& status) noexcept {
  const int code = static_cast<int>(status.code());
  return code >= 0 && code < kStatusCount ? code : MXLIMIT_EUNKNOWN;
}

void SetErrorMessage(char** errmsg, std::string_view message) noexcept {
  if (errmsg == nullptr) return;
  // malloc, not new: the caller frees it with mxlimit_free (free).
  char* copy = static_cast<char*>(std::malloc(message.size() + 1));
  if (copy != nullptr) {
    if (!message.empty()) std::memcpy(copy, message.data(), message.size());
    copy[message.size()] = '\0';
  }
  *errmsg = copy;
}

int ReportStatus(const absl::Status& status, char** errmsg) noexcept {
  SetErrorMessage(errmsg, std::string_view(status.message().data(),
                                           status.message().size()));
  return StatusToCode(status);
}

int ReportInvalidArgument(char** errmsg, std::string_view message) noexcept {
  SetErrorMessage(errmsg, message);
  return MXLIMIT_EINVAL;
}

}  // namespace mxlimit::c_api

extern "C" {

const char* mxlimit_status_name(int status) noexcept {
  using mxlimit::c_api::kStatusNames;
  if (status < 0 || status >= mxlimit::c_api::kStatusCount) {
    return "MXLIMIT_E?";
  }
  return kStatusNames[status];
}

void mxlimit_free(void* p) noexcept { std::free(p); }

}  // extern "C"
