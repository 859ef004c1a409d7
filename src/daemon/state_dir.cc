#include "src/daemon/state_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/ip.h"
#include "src/daemon/log.h"
#include "src/daemon/wall_clock.h"
#include "src/util/flat_json.h"

namespace mxlimit::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using internal::FromAbsl;

constexpr std::string_view kTiersFile = "tiers.jsonl";
constexpr std::string_view kBucketsFile = "buckets.snapshot";
// Longer lines are not ours: a subject is at most 255 bytes.
constexpr size_t kMaxTierLine = 4096;

absl::Status Errno(std::string_view what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat(internal::ToAbsl(what), " ", path,
                                             ": ", std::strerror(errno)));
}

absl::Status Sync(const std::string& path, int flags) {
  const int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open", path);
  const int rc = fsync(fd);
  close(fd);
  return rc == 0 ? absl::OkStatus() : Errno("cannot fsync", path);
}

// Writes `path` through `write` into PATH.tmp, fsyncs it, renames it over
// `path` and fsyncs the directory.
template <typename Write>
absl::Status WriteAtomically(const std::string& dir, std::string_view name,
                             Write write) {
  const std::string path = absl::StrCat(dir, "/", internal::ToAbsl(name));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Errno("cannot create", tmp);
    if (absl::Status s = write(out); !s.ok()) return s;
    out.close();
    if (!out) return Errno("cannot write", tmp);
  }
  if (absl::Status s = Sync(tmp, O_RDONLY); !s.ok()) return s;
  if (rename(tmp.c_str(), path.c_str()) != 0)
    return Errno("cannot rename", tmp);
  return Sync(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateDir>> StateDir::Open(
    const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("--state-dir is empty");
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return Errno("cannot create the state dir", path);
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Errno("cannot read", path);
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--state-dir ", path, " is not a directory"));
  }
  if (access(path.c_str(), W_OK | X_OK) != 0) {
    return Errno("cannot write to the state dir", path);
  }
  return std::unique_ptr<StateDir>(new StateDir(path));
}

void StateDir::Load(SharedLimiter& limiter) const {
  LoadTiers(limiter);
  LoadBuckets(limiter);
}

void StateDir::LoadTiers(SharedLimiter& limiter) const {
  const std::string path =
      absl::StrCat(path_, "/", internal::ToAbsl(kTiersFile));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno != ENOENT) {
      Log("warn", "cannot read the tier assignments; none restored",
          {{"file", path}, {"error", std::strerror(errno)}});
    }
    return;
  }
  const Clocks clocks = Clocks::Now();
  size_t restored = 0;
  size_t expired = 0;
  size_t line_number = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    auto skip = [&](std::string_view why) {
      Log("warn", "tier assignment not restored",
          {{"file", path},
           {"line", std::to_string(line_number)},
           {"error", why}});
    };
    if (line.size() > kMaxTierLine) {
      skip("line too long");
      continue;
    }
    absl::StatusOr<internal::FlatJson> j = internal::ParseFlatJson(line);
    if (!j.ok()) {
      skip(FromAbsl(j.status().message()));
      continue;
    }
    const internal::JsonValue* subject = j->Find("subject");
    const internal::JsonValue* tier = j->Find("tier");
    const internal::JsonValue* expires = j->Find("expires_at_ms");
    if (subject == nullptr || tier == nullptr ||
        subject->kind != internal::JsonValue::kString ||
        tier->kind != internal::JsonValue::kString ||
        (expires != nullptr &&
         expires->kind != internal::JsonValue::kInteger)) {
      skip("expected subject, tier and an optional expires_at_ms");
      continue;
    }
    std::optional<MonotonicTime> until;
    if (expires != nullptr) {
      until = clocks.Monotonic(expires->integer);
      if (!until.has_value()) {
        ++expired;
        continue;
      }
    }
    if (absl::Status s =
            limiter.SetTier(subject->text, tier->text, until, clocks.now);
        !s.ok()) {
      skip(FromAbsl(s.message()));
      continue;
    }
    ++restored;
  }
  Log("info", "tier assignments restored",
      {{"file", path},
       {"restored", std::to_string(restored)},
       {"expired", std::to_string(expired)}});
}

void StateDir::LoadBuckets(SharedLimiter& limiter) const {
  const std::string path =
      absl::StrCat(path_, "/", internal::ToAbsl(kBucketsFile));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) {
      Log("info", "no bucket snapshot; starting with empty tables",
          {{"file", path}});
    } else {
      Log("warn", "cannot read the bucket snapshot; starting with empty tables",
          {{"file", path}, {"error", std::strerror(errno)}});
    }
    return;
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<RestoreStats> stats = limiter.Restore(
      in, MonotonicTime::FromSteadyClock(), std::chrono::system_clock::now());
  if (!stats.ok()) {
    Log("warn", "bucket snapshot not restored; starting with empty tables",
        {{"file", path}, {"error", FromAbsl(stats.status().message())}});
    return;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      Clock::now() - start);
  Log("info", "buckets restored",
      {{"file", path},
       {"restored", std::to_string(stats->restored)},
       {"refilled", std::to_string(stats->refilled)},
       {"changed_policy", std::to_string(stats->unknown_policy)},
       {"unmatched", std::to_string(stats->unmatched)},
       {"ms", std::to_string(ms.count())}});
}

absl::Status StateDir::SaveTiers(const SharedLimiter& limiter) const {
  internal::MutexLock lock(tiers_mu_);
  const Clocks clocks = Clocks::Now();
  std::string text;
  for (const TierAssignment& a : limiter.ListTiers(clocks.now)) {
    if (!a.runtime) continue;
    absl::StrAppend(
        &text, "{\"kind\":",
        a.kind == TierSubjectKind::kUser ? "\"user\"" : "\"network\"",
        ",\"subject\":", internal::JsonString(a.subject),
        ",\"tier\":", internal::JsonString(a.tier));
    if (a.expires.has_value()) {
      absl::StrAppend(&text, ",\"expires_at_ms\":", clocks.WallMs(*a.expires));
    }
    text += "}\n";
  }
  absl::Status s = WriteAtomically(path_, kTiersFile, [&](std::ofstream& out) {
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    return absl::OkStatus();
  });
  if (!s.ok()) {
    Log("error", "cannot save the tier assignments",
        {{"dir", path_}, {"error", FromAbsl(s.message())}});
  }
  return s;
}

absl::Status StateDir::SaveBuckets(const SharedLimiter& limiter) const {
  const Clock::time_point start = Clock::now();
  absl::Status s =
      WriteAtomically(path_, kBucketsFile, [&](std::ofstream& out) {
        return limiter.Snapshot(out, MonotonicTime::FromSteadyClock(),
                                std::chrono::system_clock::now());
      });
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      Clock::now() - start);
  if (!s.ok()) {
    Log("error", "cannot save the bucket snapshot",
        {{"dir", path_}, {"error", FromAbsl(s.message())}});
  } else {
    const LimiterStats stats = limiter.Stats();
    Log("info", "buckets saved",
        {{"dir", path_},
         {"ip", std::to_string(stats.ip_table.size)},
         {"user", std::to_string(stats.user_table.size)},
         {"ms", std::to_string(ms.count())}});
  }
  return s;
}

}  // namespace mxlimit::daemon
