// The `store:` section of the config file: where a SharedLimiter (mxlimitd,
// `mxlimit replay --store`) keeps the buckets it shares with other
// processes. Every other limiter ignores it, but every reader checks it, so
// that `mxlimit check-config` finds a typo before mxlimitd does.
//
// The URL's shape is checked here (StoreUrlProblem, options.h) and the
// ranges are those of ValidateStoreOptions, worded per key; the store parses
// the URL with the same grammar when it connects.

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/options.h"
#include "src/config/config_warnings.h"
#include "src/config/sections.h"
#include "src/config/yaml_fields.h"
#include "src/options/store_url.h"
#include "src/util/quote.h"
#include "src/util/secret_file.h"

namespace mxlimit::config_internal {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

constexpr std::string_view kStoreKeys[] = {"url",
                                           "key_secret",
                                           "key_secret_file",
                                           "timeout",
                                           "sync_interval",
                                           "fallback_share",
                                           "connections",
                                           "clock",
                                           "max_in_flight",
                                           "local_denial",
                                           "tls"};
constexpr std::string_view kTlsKeys[] = {"ca_file", "cert_file", "key_file"};
constexpr std::string_view kClocks[] = {"store", "caller"};

// `fallback_share`: a plain number in (0, 1].
std::optional<double> ReadShare(const Field& field, ConfigErrors& errors) {
  return ReadDecimal(
      field, 0.0, 1.0, /*min_open=*/true,
      "a number above 0 and at most 1, e.g. 0.25 for 4 processes", errors);
}

// A relative `path` from the config file's directory.
std::string FromConfigDir(std::string path, std::string_view config_file) {
  if (path.empty() || path.front() == '/') return path;
  const size_t slash = config_file.rfind('/');
  if (slash == std::string_view::npos) return path;
  return absl::StrCat(ToAbsl(config_file.substr(0, slash + 1)), path);
}

// `key_secret_file`, relative to the config file's directory. The contents
// with one trailing newline removed (what `echo` or an editor leaves). Only a
// regular file: a FIFO or a device would block or never end.
std::optional<std::string> ReadSecretFile(const Field& field,
                                          std::string_view config_file,
                                          ConfigErrors& errors) {
  std::optional<std::string> path =
      ReadString(field, "the path of a file holding the secret", errors);
  if (!path.has_value()) return std::nullopt;
  const std::string full = FromConfigDir(*path, config_file);
  auto fail = [&](std::string_view why) {
    errors.Add(field.mark(), absl::StrCat(field.path, ": ", QuoteForError(full),
                                          ": ", ToAbsl(why)));
    return std::nullopt;
  };
  if (path->empty()) return fail("the path is empty");
  absl::StatusOr<std::string> text = internal::ReadSecretFile(full);
  if (!text.ok()) return fail(std::string(text.status().message()));
  return *std::move(text);
}

void CheckSecretLength(const Field& field, const std::string& secret,
                       ConfigErrors& errors) {
  if (secret.size() >= StoreOptions::kMinKeySecretBytes) return;
  // The secret itself is never quoted, only its length.
  errors.Add(field.mark(),
             absl::StrCat(field.path, ": got ", secret.size(),
                          " bytes, expected at least ",
                          StoreOptions::kMinKeySecretBytes,
                          " (the same random secret on every process that "
                          "shares buckets, e.g. from openssl rand -hex 32)"));
}

void MissingKey(const Field& field, std::string_view what,
                ConfigErrors& errors) {
  errors.Add(field.value.Mark(),
             absl::StrCat(field.path, ": missing required key ", ToAbsl(what)));
}

void ReadUrl(const Field& field, const MapFields& map, StoreOptions& store,
             ConfigErrors& errors) {
  const Field* f = map.Find("url");
  if (f == nullptr) {
    MissingKey(field, "\"url\"", errors);
    return;
  }
  std::optional<std::string> url =
      ReadString(*f, "a store URL such as redis://127.0.0.1:6379/0", errors);
  if (!url.has_value()) return;
  if (std::string problem = StoreUrlProblem(*url); !problem.empty()) {
    errors.Add(f->mark(), absl::StrCat(f->path, ": ", problem));
  } else {
    store.url = *std::move(url);
  }
}

void ReadKeySecret(const Field& field, const MapFields& map,
                   std::string_view file_name, StoreOptions& store,
                   ConfigErrors& errors) {
  const Field* secret = map.Find("key_secret");
  const Field* secret_file = map.Find("key_secret_file");
  if (secret != nullptr && secret_file != nullptr) {
    errors.Add(
        secret_file->key.Mark(),
        absl::StrCat(secret_file->path, ": key_secret is also given (line ",
                     secret->key.Mark().line + 1, "); keep one of them"));
    return;
  }
  if (secret == nullptr && secret_file == nullptr) {
    MissingKey(field, "\"key_secret\" (or \"key_secret_file\")", errors);
    return;
  }
  std::optional<std::string> text =
      secret != nullptr
          ? ReadString(*secret, "a secret of at least 16 bytes", errors)
          : ReadSecretFile(*secret_file, file_name, errors);
  if (!text.has_value()) return;
  CheckSecretLength(secret != nullptr ? *secret : *secret_file, *text, errors);
  store.key_secret = *std::move(text);
}

void ReadClock(const Field& f, StoreOptions& store, ConfigErrors& errors,
               ConfigErrors& warnings) {
  std::optional<std::string> clock = ReadString(f, "store or caller", errors);
  if (!clock.has_value()) return;
  if (*clock == "store") {
    store.clock = StoreOptions::Clock::kStore;
  } else if (*clock == "caller") {
    store.clock = StoreOptions::Clock::kCaller;
    WarnCallerClock(f, warnings);
  } else {
    std::string message = absl::StrCat(f.path, ": got ", DescribeValue(f.value),
                                       ", expected store or caller");
    if (auto near = NearestWord(*clock, kClocks)) {
      absl::StrAppend(&message, " (did you mean \"", ToAbsl(*near), "\"?)");
    }
    errors.Add(f.mark(), std::move(message));
  }
}

// A `store.tls` file: relative to the config file's directory, and a
// readable regular file now (its PEM is read when the store starts).
std::optional<std::string> ReadTlsFile(const Field& f,
                                       std::string_view config_file,
                                       ConfigErrors& errors) {
  std::optional<std::string> path =
      ReadString(f, "the path of a PEM file", errors);
  if (!path.has_value()) return std::nullopt;
  std::string full = FromConfigDir(*path, config_file);
  struct stat st {};
  std::string_view why;
  if (full.empty()) {
    why = "the path is empty";
  } else if (stat(full.c_str(), &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (access(full.c_str(), R_OK) != 0) {
    why = "not readable by this user";
  }
  if (!why.empty()) {
    errors.Add(f.mark(), absl::StrCat(f.path, ": ", QuoteForError(full), ": ",
                                      ToAbsl(why)));
    return std::nullopt;
  }
  return full;
}

void ReadTls(const Field& field, std::string_view config_file,
             StoreOptions& store, ConfigErrors& errors) {
  MapFields map(field, kTlsKeys, /*null_is_empty=*/false, errors);
  if (!field.value.IsMap()) return;
  std::string* const targets[] = {&store.tls.ca_file, &store.tls.cert_file,
                                  &store.tls.key_file};
  for (size_t i = 0; i < std::size(kTlsKeys); ++i) {
    if (const Field* f = map.Find(kTlsKeys[i])) {
      if (std::optional<std::string> p = ReadTlsFile(*f, config_file, errors)) {
        *targets[i] = *std::move(p);
      }
    }
  }
  // The same rules as ValidateStoreOptions, reported at the line.
  const Field* cert = map.Find("cert_file");
  const Field* key = map.Find("key_file");
  if ((cert == nullptr) != (key == nullptr)) {
    const Field& given = cert != nullptr ? *cert : *key;
    errors.Add(given.key.Mark(),
               absl::StrCat(given.path, ": given without store.tls.",
                            cert != nullptr ? "key_file" : "cert_file",
                            "; a client certificate and its key go together"));
  }
  if (!store.url.empty() && !internal::IsTlsStoreUrl(store.url)) {
    errors.Add(
        field.key.Mark(),
        absl::StrCat(field.path, ": ", ToAbsl(internal::kStoreTlsWithoutTls)));
  }
}

}  // namespace

void ReadStore(const Field& field, std::string_view file_name,
               StoreOptions& store, ConfigErrors& errors,
               ConfigErrors& warnings) {
  if (field.value.IsScalar()) {
    // Likely the URL itself, perhaps with a password: quoted redacted, like
    // every other store URL.
    errors.Add(field.mark(),
               absl::StrCat(field.path, ": got ",
                            QuoteForError(RedactStoreUrl(field.value.Scalar())),
                            ", expected a map with keys url, key_secret, ... "
                            "(store: {url: ..., key_secret: ...})"));
    return;
  }
  MapFields map(field, kStoreKeys, /*null_is_empty=*/false, errors);
  if (!field.value.IsMap()) return;
  ReadUrl(field, map, store, errors);
  ReadKeySecret(field, map, file_name, store, errors);
  if (const Field* f = map.Find("timeout")) {
    if (std::optional<int64_t> us =
            ReadDuration(*f, 100, 10'000'000, 1,
                         "a duration from 100us to 10s, such as 5ms", errors)) {
      store.timeout = std::chrono::microseconds(*us);
    }
  }
  if (const Field* f = map.Find("sync_interval")) {
    if (std::optional<int64_t> us = ReadDuration(
            *f, 1000, 60'000'000, 1000,
            "a whole number of milliseconds from 1ms to 60s, such as 50ms",
            errors)) {
      store.sync_interval = std::chrono::milliseconds(*us / 1000);
    }
  }
  if (const Field* f = map.Find("fallback_share")) {
    if (std::optional<double> v = ReadShare(*f, errors)) {
      store.fallback_share = *v;
    }
  }
  if (const Field* f = map.Find("connections")) {
    if (std::optional<int64_t> v =
            ReadIntegerInRange(*f, 1, StoreOptions::kMaxConnections, errors)) {
      store.connections = static_cast<int>(*v);
    }
  }
  if (const Field* f = map.Find("clock"))
    ReadClock(*f, store, errors, warnings);
  if (const Field* f = map.Find("max_in_flight")) {
    if (std::optional<int64_t> v =
            ReadIntegerInRange(*f, 1, 1'000'000, errors)) {
      store.max_in_flight = static_cast<size_t>(*v);
    }
  }
  if (const Field* f = map.Find("local_denial")) {
    if (std::optional<bool> v = ReadBool(*f, errors)) store.local_denial = *v;
  }
  if (const Field* f = map.Find("tls")) ReadTls(*f, file_name, store, errors);
}

}  // namespace mxlimit::config_internal
