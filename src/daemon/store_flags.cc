#include "src/daemon/store_flags.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace mxlimit::daemon {
namespace {

// Larger than any secret; a bigger file is the wrong file.
constexpr size_t kMaxSecretBytes = 4096;

absl::StatusOr<std::string> ReadSecret(const std::string& path) {
  auto fail = [&](int error, const std::string& what) {
    return absl::ErrnoToStatus(
        error, absl::StrCat("--store-secret-file ", path, ": ", what));
  };
  // O_NONBLOCK: a FIFO must not hang the start; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail(errno, "cannot open");
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("--store-secret-file ", path, ": is not a regular file"));
  }
  std::string text;
  char buffer[kMaxSecretBytes + 1];
  while (text.size() <= kMaxSecretBytes) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      return fail(error, "cannot read");
    }
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  if (text.size() > kMaxSecretBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--store-secret-file ", path, ": is over ",
                     kMaxSecretBytes, " bytes; is this the right file?"));
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.size() < StoreOptions::kMinKeySecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--store-secret-file ", path, ": holds ", text.size(),
        " bytes, expected at least ", StoreOptions::kMinKeySecretBytes,
        " (the same random secret on every process, e.g. from openssl rand "
        "-hex 32)"));
  }
  return text;
}

}  // namespace

absl::StatusOr<StoreOverrides> StoreOverrides::FromFlags(const Flags& flags) {
  StoreOverrides o;
  o.url_ = flags.store_url;
  o.secret_file_ = flags.store_secret_file;
  if (!flags.store_secret_file.empty()) {
    absl::StatusOr<std::string> secret = ReadSecret(flags.store_secret_file);
    if (!secret.ok()) return secret.status();
    o.key_secret_ = *std::move(secret);
  }
  return o;
}

absl::Status StoreOverrides::Apply(LimiterConfig& config) const {
  if (!url_.empty()) config.store.url = url_;
  if (!key_secret_.empty()) config.store.key_secret = key_secret_;
  if (config.store.url.empty()) {
    if (!secret_file_.empty()) {
      return absl::InvalidArgumentError(
          "--store-secret-file is given, but no store: add --store URL or a "
          "store: section to the config");
    }
    return absl::OkStatus();
  }
  if (config.store.key_secret.empty()) {
    return absl::InvalidArgumentError(
        "--store needs a key secret: store.key_secret or "
        "store.key_secret_file in the config, or --store-secret-file");
  }
  return absl::OkStatus();
}

}  // namespace mxlimit::daemon
