// -----------------------------------------------------------------------------
// File: replay/line_reader.h
// -----------------------------------------------------------------------------
//
// `LineReader` streams the lines of a file (or stdin) for replay: one large
// buffer allocated at construction, filled with `fread`, lines split on '\n'
// with `memchr` and returned as views into that buffer. No allocation per
// line, memory fixed whatever the input.
//
// Line rules (so that `--decisions` prints exactly one line per input line):
//   - '\n' ends a line; one '\r' before it is dropped (CRLF files).
//   - A last line without '\n' is still a line; an input ending in '\n' has
//     no extra empty line after it. Empty lines are lines.
//   - A line longer than `max_line_bytes` (after dropping '\r') is returned
//     with `too_long` set and an empty `text`: its bytes are skipped, not
//     buffered, and `head` holds its first bytes for error messages. It is
//     still one line, counted and numbered like the others.
//
// NOTE: `fread` waits for a full chunk (or the end) before lines come out, so
// on a slow pipe (`tail -f log | mxlimit replay -`) output lags by up to one
// chunk. Replay is a batch tool; pass a smaller `chunk_bytes` if that matters.
//
// Example:
//   mxlimit::replay::LineReader reader(stdin);
//   mxlimit::replay::Line line;
//   while (reader.Next(&line)) {
//     if (line.too_long) { CountInvalid(line.number); continue; }
//     Parse(line.text);
//   }
//   if (!reader.status().ok()) Fail(reader.status());

#ifndef MXLIMIT_REPLAY_LINE_READER_H_
#define MXLIMIT_REPLAY_LINE_READER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string_view>

#include "absl/status/status.h"

namespace mxlimit::replay {

struct Line {
  // The line without its '\n' (and '\r'); empty when `too_long`. Valid until
  // the next `Next()` call.
  std::string_view text;
  // For a `too_long` line, its first bytes (at most `kHeadBytes`), for error
  // messages only: never parse them as the line. Equal to a prefix of `text`
  // otherwise.
  std::string_view head;
  // 1-based.
  uint64_t number = 0;
  // The line's full length in bytes, skipped bytes included, '\r\n' excluded.
  uint64_t length = 0;
  bool too_long = false;
};

class LineReader {
 public:
  static constexpr size_t kDefaultMaxLineBytes = size_t{64} * 1024;
  static constexpr size_t kDefaultChunkBytes = size_t{1024} * 1024;
  static constexpr size_t kHeadBytes = 120;

  // Reads `file` (not owned, not closed) from its current position. Allocates
  // max_line_bytes + chunk_bytes once.
  // REQUIRES: file != nullptr, max_line_bytes >= 1, chunk_bytes >= 1.
  explicit LineReader(std::FILE* file,
                      size_t max_line_bytes = kDefaultMaxLineBytes,
                      size_t chunk_bytes = kDefaultChunkBytes);

  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line, or false at the end of the input or on a read error (see
  // `status()`).
  bool Next(Line* line);

  // OK, or the read error that ended the input early.
  const absl::Status& status() const { return status_; }

  // Bytes consumed from the file so far (for a progress bar).
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  // Moves the unconsumed bytes to the front and reads more after them. Sets
  // eof_ when nothing more comes.
  void Refill();
  // The buffered bytes from pos_ hold more than max_line_ bytes and no '\n':
  // reads on, discarding, until the line ends.
  bool SkipLongLine(Line* line);

  std::FILE* file_;
  size_t max_line_;
  size_t capacity_;
  std::unique_ptr<char[]> buffer_;
  size_t pos_ = 0;  // first unconsumed byte
  size_t end_ = 0;  // one past the last buffered byte
  bool eof_ = false;
  uint64_t line_number_ = 0;
  uint64_t bytes_read_ = 0;
  absl::Status status_;
};

}  // namespace mxlimit::replay

#endif  // MXLIMIT_REPLAY_LINE_READER_H_
