// The limiter's life: create from a policy file or text, reload, free; and
// the calls that are about the whole limiter (metrics, version).

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "mxlimit/c.h"
#include "mxlimit/config.h"
#include "mxlimit/options.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/stats.h"
#include "src/c/c_handle.h"
#include "src/c/c_status.h"

namespace mxlimit::c_api {
namespace {

// The name a policy text goes by in messages when the caller gives none.
constexpr const char* kDefaultYamlName = "<yaml>";

// Reads the caller's options into `shards`. NULL means the defaults. A
// caller built against a later header may pass a larger struct; its extra
// fields must then be zero, or we would silently ignore what it asked for.
int ReadOptions(const mxlimit_options* options, size_t& shards, char** errmsg) {
  shards = 0;
  if (options == nullptr) return MXLIMIT_OK;
  if (options->struct_size < kFirstOptionsSize) {
    return ReportInvalidArgument(errmsg,
                                 "mxlimit options: struct_size is smaller than "
                                 "sizeof(mxlimit_options) of any version; use "
                                 "MXLIMIT_OPTIONS_INIT");
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(options);
  for (size_t i = sizeof(mxlimit_options); i < options->struct_size; ++i) {
    if (bytes[i] != 0) {
      return ReportInvalidArgument(
          errmsg,
          "mxlimit options: a field this version of libmxlimit_c "
          "does not know is set (the header is newer than the "
          "library)");
    }
  }
  shards = options->shards;
  return MXLIMIT_OK;
}

// The text of a policy file passed in memory, checked.
bool ReadText(const char* text, size_t len, std::string_view& out) {
  if (text == nullptr && len != 0) return false;
  out = len == 0 ? std::string_view() : std::string_view(text, len);
  return true;
}

int Create(const absl::StatusOr<LimiterConfig>& config,
           const mxlimit_options* options, mxlimit_limiter** out,
           char** errmsg) {
  size_t shards = 0;
  if (int rc = ReadOptions(options, shards, errmsg); rc != MXLIMIT_OK) {
    return rc;
  }
  if (!config.ok()) return ReportStatus(config.status(), errmsg);
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> limiter =
      ShardedLimiter::Create(*config, shards);
  if (!limiter.ok()) return ReportStatus(limiter.status(), errmsg);
  auto handle = std::make_unique<mxlimit_limiter>();
  handle->limiter = *std::move(limiter);
  *out = handle.release();
  return MXLIMIT_OK;
}

int Reload(mxlimit_limiter* limiter,
           const absl::StatusOr<LimiterConfig>& config, char** errmsg) {
  if (!config.ok()) return ReportStatus(config.status(), errmsg);
  absl::Status reloaded = limiter->limiter->Reload(*config);
  if (!reloaded.ok()) return ReportStatus(reloaded, errmsg);
  return MXLIMIT_OK;
}

// Clears the out-parameters first, so every failure leaves them NULL.
void ClearOutputs(mxlimit_limiter** out, char** errmsg) {
  if (out != nullptr) *out = nullptr;
  if (errmsg != nullptr) *errmsg = nullptr;
}

}  // namespace
}  // namespace mxlimit::c_api

using mxlimit::c_api::Guarded;
using mxlimit::c_api::ReportInvalidArgument;

extern "C" {

uint32_t mxlimit_version(void) noexcept { return MXLIMIT_VERSION_NUMBER; }

int mxlimit_limiter_new_from_file(const char* path,
                                  const mxlimit_options* options,
                                  mxlimit_limiter** out,
                                  char** errmsg) noexcept {
  mxlimit::c_api::ClearOutputs(out, errmsg);
  if (path == nullptr) {
    return ReportInvalidArgument(errmsg,
                                 "mxlimit_limiter_new_from_file: path is NULL");
  }
  if (out == nullptr) {
    return ReportInvalidArgument(errmsg,
                                 "mxlimit_limiter_new_from_file: out is NULL");
  }
  return Guarded(errmsg, [&] {
    return mxlimit::c_api::Create(mxlimit::LoadConfigFile(path), options, out,
                                  errmsg);
  });
}

int mxlimit_limiter_new_from_yaml(const char* text, size_t len,
                                  const char* file_name,
                                  const mxlimit_options* options,
                                  mxlimit_limiter** out,
                                  char** errmsg) noexcept {
  mxlimit::c_api::ClearOutputs(out, errmsg);
  std::string_view yaml;
  if (!mxlimit::c_api::ReadText(text, len, yaml)) {
    return ReportInvalidArgument(
        errmsg, "mxlimit_limiter_new_from_yaml: text is NULL, len is not 0");
  }
  if (out == nullptr) {
    return ReportInvalidArgument(errmsg,
                                 "mxlimit_limiter_new_from_yaml: out is NULL");
  }
  return Guarded(errmsg, [&] {
    return mxlimit::c_api::Create(
        mxlimit::ParseConfig(yaml, file_name != nullptr
                                       ? file_name
                                       : mxlimit::c_api::kDefaultYamlName),
        options, out, errmsg);
  });
}

int mxlimit_limiter_reload_file(mxlimit_limiter* limiter, const char* path,
                                char** errmsg) noexcept {
  mxlimit::c_api::ClearOutputs(nullptr, errmsg);
  if (limiter == nullptr) {
    return ReportInvalidArgument(
        errmsg, "mxlimit_limiter_reload_file: limiter is NULL");
  }
  if (path == nullptr) {
    return ReportInvalidArgument(errmsg,
                                 "mxlimit_limiter_reload_file: path is NULL");
  }
  return Guarded(errmsg, [&] {
    return mxlimit::c_api::Reload(limiter, mxlimit::LoadConfigFile(path),
                                  errmsg);
  });
}

int mxlimit_limiter_reload_yaml(mxlimit_limiter* limiter, const char* text,
                                size_t len, const char* file_name,
                                char** errmsg) noexcept {
  mxlimit::c_api::ClearOutputs(nullptr, errmsg);
  if (limiter == nullptr) {
    return ReportInvalidArgument(
        errmsg, "mxlimit_limiter_reload_yaml: limiter is NULL");
  }
  std::string_view yaml;
  if (!mxlimit::c_api::ReadText(text, len, yaml)) {
    return ReportInvalidArgument(
        errmsg, "mxlimit_limiter_reload_yaml: text is NULL, len is not 0");
  }
  return Guarded(errmsg, [&] {
    return mxlimit::c_api::Reload(
        limiter,
        mxlimit::ParseConfig(yaml, file_name != nullptr
                                       ? file_name
                                       : mxlimit::c_api::kDefaultYamlName),
        errmsg);
  });
}

void mxlimit_limiter_free(mxlimit_limiter* limiter) noexcept {
  // Destructors do not throw; the handle owns everything it points to.
  delete limiter;
}

int mxlimit_metrics_prometheus(const mxlimit_limiter* limiter, char** out,
                               size_t* len) noexcept {
  if (out != nullptr) *out = nullptr;
  if (len != nullptr) *len = 0;
  if (limiter == nullptr || out == nullptr) return MXLIMIT_EINVAL;
  return Guarded(nullptr, [&] {
    const std::string text =
        mxlimit::FormatPrometheus(limiter->limiter->Stats());
    // malloc, not new: the caller frees it with mxlimit_free.
    char* copy = static_cast<char*>(std::malloc(text.size() + 1));
    if (copy == nullptr) return static_cast<int>(MXLIMIT_ENOMEM);
    std::memcpy(copy, text.c_str(), text.size() + 1);
    *out = copy;
    if (len != nullptr) *len = text.size();
    return static_cast<int>(MXLIMIT_OK);
  });
}

}  // extern "C"
