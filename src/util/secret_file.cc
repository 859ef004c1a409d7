#include "src/util/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace mxlimit::internal {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  // O_NONBLOCK: a FIFO must not hang the start; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return absl::ErrnoToStatus(errno, "cannot open");
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError("is not a regular file");
  }
  std::string text;
  char buffer[kMaxSecretFileBytes + 1];
  while (text.size() <= kMaxSecretFileBytes) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      return absl::ErrnoToStatus(error, "cannot read");
    }
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  if (text.size() > kMaxSecretFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "is over ", kMaxSecretFileBytes, " bytes; is this the right file?"));
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace mxlimit::internal
