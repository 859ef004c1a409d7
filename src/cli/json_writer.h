// -----------------------------------------------------------------------------
// File: cli/json_writer.h
// -----------------------------------------------------------------------------
//
// A tiny streaming JSON writer for the CLI's `--json` outputs: objects,
// arrays, strings (escaped, invalid UTF-8 bytes replaced), integers, doubles
// and booleans. It tracks commas; it does not check that the caller closes
// what it opens (the CLI's call sites are straight-line code).

#ifndef MXLIMIT_CLI_JSON_WRITER_H_
#define MXLIMIT_CLI_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mxlimit::cli {

class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }

  // Inside an object: the next value's key.
  JsonWriter& Key(std::string_view key) {
    Separate();
    AppendString(key);
    out_.push_back(':');
    after_key_ = true;
    return *this;
  }
  JsonWriter& String(std::string_view value) {
    Separate();
    AppendString(value);
    return *this;
  }
  JsonWriter& Int(int64_t value) {
    Separate();
    out_ += std::to_string(value);
    return *this;
  }
  JsonWriter& Uint(uint64_t value) {
    Separate();
    out_ += std::to_string(value);
    return *this;
  }
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value) {
    Separate();
    out_ += value ? "true" : "false";
    return *this;
  }
  JsonWriter& Null() {
    Separate();
    out_ += "null";
    return *this;
  }

  const std::string& str() const { return out_; }

 private:
  JsonWriter& Open(char c) {
    Separate();
    out_.push_back(c);
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char c) {
    out_.push_back(c);
    if (!first_.empty()) first_.pop_back();
    return *this;
  }
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_.push_back(',');
      first_.back() = false;
    }
  }
  void AppendString(std::string_view s);

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_JSON_WRITER_H_
