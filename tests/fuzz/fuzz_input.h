// A small reader that turns a fuzzer's byte string into typed choices. Every
// read is total: past the end it returns zeros and empty strings, so a target
// never has to check sizes and short inputs still run to the end.
//
// (clang's FuzzedDataProvider does the same, but it is a clang header; this
// one also builds with g++ for the corpus regression tests.)

#ifndef MXLIMIT_TESTS_FUZZ_FUZZ_INPUT_H_
#define MXLIMIT_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace mxlimit::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size)
      : data_(reinterpret_cast<const char*>(data)), size_(size) {}

  size_t remaining() const { return size_ - pos_; }
  bool empty() const { return pos_ == size_; }

  uint8_t Byte() {
    return pos_ < size_ ? static_cast<uint8_t>(data_[pos_++]) : 0;
  }

  // An integer from the next sizeof(T) bytes (little-endian; zero-filled).
  template <typename T>
  T Int() {
    static_assert(std::is_integral_v<T>);
    std::make_unsigned_t<T> v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      v |= static_cast<std::make_unsigned_t<T>>(Byte()) << (8 * i);
    }
    return static_cast<T>(v);
  }

  // The next `n` bytes (fewer at the end).
  std::string_view Bytes(size_t n) {
    if (n > remaining()) n = remaining();
    std::string_view out(data_ + pos_, n);
    pos_ += n;
    return out;
  }

  // A string of length Byte() % (max_len + 1): short strings are cheap for the
  // fuzzer to reach, and the length is bounded.
  std::string_view ShortString(size_t max_len = 255) {
    return Bytes(Byte() % (max_len + 1));
  }

  // Everything up to the next `delim` (consumed, not returned), or the rest.
  std::string_view Until(char delim) {
    const void* hit = std::memchr(data_ + pos_, delim, remaining());
    if (hit == nullptr) return Rest();
    size_t n = static_cast<const char*>(hit) - (data_ + pos_);
    std::string_view out(data_ + pos_, n);
    pos_ += n + 1;
    return out;
  }

  std::string_view Rest() { return Bytes(remaining()); }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace mxlimit::fuzz

#endif  // MXLIMIT_TESTS_FUZZ_FUZZ_INPUT_H_
