#include "src/cli/output.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::cli {

using internal::ToAbsl;

void PrintError(std::string_view command, std::string_view message) {
  const std::string prefix =
      command.empty() ? "mxlimit: "
                      : absl::StrCat("mxlimit ", ToAbsl(command), ": ");
  std::string text;
  while (true) {
    const size_t nl = message.find('\n');
    absl::StrAppend(&text, prefix, ToAbsl(message.substr(0, nl)), "\n");
    if (nl == std::string_view::npos || nl + 1 == message.size()) break;
    message.remove_prefix(nl + 1);
  }
  // One write, so that lines from a concurrent writer to the same terminal
  // do not land inside ours. If standard error itself fails there is no one
  // left to tell; the exit code still says it.
  std::fwrite(text.data(), 1, text.size(), stderr);
}

Output::Output(std::string_view command, std::FILE* file)
    : command_(command), file_(file) {
  buffer_.reserve(kBlockBytes + 4096);
}

void Output::Flush() {
  if (buffer_.empty()) return;
  errno = 0;
  if (ok() &&
      std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    error_ = errno != 0 ? errno : EIO;
  }
  buffer_.clear();
}

bool Output::Finish() {
  Flush();
  // Short writes sit in stdio's own buffer until here: a full disk shows
  // only now.
  errno = 0;
  if (ok() && std::fflush(file_) != 0) error_ = errno != 0 ? errno : EIO;
  if (ok()) return true;
  PrintError(command_, absl::StrCat("error writing standard output: ",
                                    std::strerror(error_)));
  return false;
}

}  // namespace mxlimit::cli
