#include "src/daemon/token_key.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/hex.h"
#include "src/util/secret_file.h"

namespace mxlimit::daemon {
namespace {

using internal::HexDigitValue;

constexpr char kHex[] = "0123456789abcdef";

std::string FormatSecret(const internal::SipKey& key) {
  std::string out;
  for (uint64_t word : {key.k0, key.k1}) {
    for (int b = 0; b < 8; ++b) {
      const unsigned byte = (word >> (8 * b)) & 0xFF;
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xF]);
    }
  }
  out.push_back('\n');
  return out;
}

absl::StatusOr<internal::SipKey> ParseSecret(const std::string& path,
                                             std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  if (text.size() != 32) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected 32 hex digits (the token-hash secret), found ",
        text.size(), " bytes"));
  }
  internal::SipKey key;
  for (size_t i = 0; i < 16; ++i) {
    const int hi = HexDigitValue(text[2 * i]);
    const int lo = HexDigitValue(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": the token-hash secret is not hex"));
    }
    uint64_t& word = i < 8 ? key.k0 : key.k1;
    word |= static_cast<uint64_t>(hi << 4 | lo) << (8 * (i % 8));
  }
  return key;
}

}  // namespace

TokenUserId TokenHashUserId(const internal::SipKey& secret,
                            std::string_view token) {
  const internal::SipDigest d = internal::SipHash128(secret, token);
  TokenUserId id;
  char* p = id.bytes.data();
  *p++ = '@';
  *p++ = 't';
  p = internal::AppendBase64Url(d, p);
  constexpr std::string_view kSuffix = ":mxlimit";
  std::copy(kSuffix.begin(), kSuffix.end(), p);
  return id;
}

absl::StatusOr<internal::SipKey> LoadOrCreateSecret(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    // Only a regular file, and at most a few KiB of it: a FIFO or a device
    // named by --secret-file must not hang the start or fill the memory.
    absl::StatusOr<std::string> existing = internal::ReadSecretFile(path);
    if (existing.ok()) return ParseSecret(path, *std::move(existing));
    if (!absl::IsNotFound(existing.status())) {
      return absl::Status(existing.status().code(),
                          absl::StrCat(path, ": the token-hash secret ",
                                       existing.status().message()));
    }
    internal::SipKey key;
    uint8_t raw[16];
    if (getrandom(raw, sizeof(raw), 0) != static_cast<ssize_t>(sizeof(raw))) {
      return absl::InternalError(absl::StrCat("getrandom: ", strerror(errno)));
    }
    std::memcpy(&key.k0, raw, 8);
    std::memcpy(&key.k1, raw + 8, 8);
    const int fd =
        open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;  // another process won the race: read it
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": cannot create the token-hash secret: ", strerror(errno),
          " (use --secret-file to put it in a writable directory)"));
    }
    const std::string text = FormatSecret(key);
    const bool written = write(fd, text.data(), text.size()) ==
                             static_cast<ssize_t>(text.size()) &&
                         fsync(fd) == 0;
    close(fd);
    if (!written) {
      unlink(path.c_str());
      return absl::InternalError(
          absl::StrCat(path, ": cannot write the token-hash secret"));
    }
    // Read back what was written, so both paths return the same value.
    return ParseSecret(path, text);
  }
  return absl::InternalError(absl::StrCat(path, ": cannot read or create"));
}

}  // namespace mxlimit::daemon
