// -----------------------------------------------------------------------------
// File: cli/output.h
// -----------------------------------------------------------------------------
//
// How every subcommand of the `mxlimit` tool writes. Results go through one
// `Output`, which buffers them and checks every write, so a full disk or a
// closed standard output is never a silent success; errors go through
// `PrintError`, so every line on standard error starts `mxlimit <subcommand>:`
// and a script that runs several tools can tell who complained.
//
// Example:
//   Output out("explain");
//   out.Append(report);
//   if (!out.Finish()) return kExitFinding;  // Finish printed the error.

#ifndef MXLIMIT_CLI_OUTPUT_H_
#define MXLIMIT_CLI_OUTPUT_H_

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace mxlimit::cli {

// PrintError()
//
// Writes `message` to standard error, each of its lines prefixed with
// `mxlimit <command>: ` (`mxlimit: ` when `command` is empty, for errors
// before any subcommand was named).
void PrintError(std::string_view command, std::string_view message);

// Output
//
// Standard output (or `file`) in blocks of about `kBlockBytes`: one `fwrite`
// per block, not a stream operation per line, which is what lets `replay
// --decisions` and `normalize` write millions of lines per second.
//
// Every write is checked. After the first failure the rest is dropped and
// `ok()` is false, so a long run can stop early; `Finish()` flushes, and on
// any failure prints `mxlimit <command>: error writing standard output: why`
// once and returns false: the subcommand then exits 1.
class Output {
 public:
  static constexpr size_t kBlockBytes = size_t{1} << 20;

  explicit Output(std::string_view command, std::FILE* file = stdout);

  // Not copyable: two copies would interleave one file's blocks.
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // Output::Append()
  //
  // Buffers `text`, writing the buffer out once it holds a block.
  void Append(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= kBlockBytes) Flush();
  }

  // Output::Line()
  //
  // `text` and a newline.
  void Line(std::string_view text) {
    buffer_.append(text);
    buffer_.push_back('\n');
    if (buffer_.size() >= kBlockBytes) Flush();
  }

  // Output::ok()
  //
  // False once a write failed.
  bool ok() const { return error_ == 0; }

  // Output::Finish()
  //
  // Writes what is buffered and flushes the stream. True when every write
  // since construction succeeded; otherwise prints the error (once) and
  // returns false. Call it once, last.
  bool Finish();

 private:
  void Flush();

  std::string command_;
  std::FILE* file_;
  std::string buffer_;
  int error_ = 0;  // errno of the first failed write
};

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_OUTPUT_H_
