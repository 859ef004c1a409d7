#include "src/replay/line_reader.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <string>

namespace mxlimit::replay {

LineReader::LineReader(std::FILE* file, size_t max_line_bytes,
                       size_t chunk_bytes)
    : file_(file),
      max_line_(std::max<size_t>(max_line_bytes, 1)),
      // +2: a line of exactly max_line_ bytes plus "\r\n" still fits whole.
      capacity_(max_line_ + 2 + std::max<size_t>(chunk_bytes, 1)),
      buffer_(new char[capacity_]) {
  assert(file != nullptr);
}

void LineReader::Refill() {
  size_t have = end_ - pos_;
  if (pos_ > 0 && have > 0)
    std::memmove(buffer_.get(), buffer_.get() + pos_, have);
  pos_ = 0;
  end_ = have;
  size_t n = std::fread(buffer_.get() + end_, 1, capacity_ - end_, file_);
  end_ += n;
  bytes_read_ += n;
  if (n == 0) {
    eof_ = true;
    if (std::ferror(file_)) {
      status_ = absl::DataLossError(std::string("read error: ") +
                                    std::strerror(errno));
    }
  }
}

bool LineReader::Next(Line* line) {
  for (;;) {
    char* begin = buffer_.get() + pos_;
    size_t have = end_ - pos_;
    char* nl = static_cast<char*>(std::memchr(begin, '\n', have));
    if (nl != nullptr || (eof_ && have > 0)) {
      size_t len = nl != nullptr ? static_cast<size_t>(nl - begin) : have;
      pos_ += nl != nullptr ? len + 1 : len;
      if (len > 0 && begin[len - 1] == '\r') --len;
      line->number = ++line_number_;
      line->length = len;
      line->too_long = len > max_line_;
      line->head = std::string_view(begin, std::min(len, kHeadBytes));
      line->text =
          line->too_long ? std::string_view() : std::string_view(begin, len);
      return true;
    }
    if (eof_) return false;
    // Room for max_line_ bytes and a "\r\n" before calling it too long.
    if (have > max_line_ + 1) return SkipLongLine(line);
    Refill();
  }
}

bool LineReader::SkipLongLine(Line* line) {
  // Keep the line's first bytes at the front for `head`; read the rest into
  // the space after them and drop it until a '\n' shows up.
  // At most max_line_ bytes, so the rest of the buffer (>= chunk + 2 bytes)
  // stays free for reading on.
  size_t keep = std::min({end_ - pos_, kHeadBytes, max_line_});
  uint64_t length = end_ - pos_;
  bool last_was_cr = buffer_[end_ - 1] == '\r';
  std::memmove(buffer_.get(), buffer_.get() + pos_, keep);
  pos_ = end_ = keep;
  for (;;) {
    size_t n = std::fread(buffer_.get() + keep, 1, capacity_ - keep, file_);
    bytes_read_ += n;
    if (n == 0) {
      eof_ = true;
      if (std::ferror(file_)) {
        status_ = absl::DataLossError(std::string("read error: ") +
                                      std::strerror(errno));
      }
      if (last_was_cr) --length;
      break;
    }
    char* chunk = buffer_.get() + keep;
    char* nl = static_cast<char*>(std::memchr(chunk, '\n', n));
    if (nl != nullptr) {
      size_t part = static_cast<size_t>(nl - chunk);
      length += part;
      bool cr = part > 0 ? chunk[part - 1] == '\r' : last_was_cr;
      if (cr) --length;
      pos_ = keep + part + 1;
      end_ = keep + n;
      break;
    }
    length += n;
    last_was_cr = chunk[n - 1] == '\r';
  }
  line->number = ++line_number_;
  line->length = length;
  line->too_long = true;
  line->text = std::string_view();
  line->head = std::string_view(buffer_.get(), keep);
  return true;
}

}  // namespace mxlimit::replay
