// Error messages for mxlimit/user_id.h. The rule itself is the constexpr
// `internal::CheckUserId` in the header; this file only words its answer.

#include "mxlimit/user_id.h"

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/util/quote.h"

namespace mxlimit {
namespace {

using internal::UserIdDefect;

// "byte 0xC3 at offset 2", or "'_' (byte 0x5F) at offset 6" when the byte is
// printable ASCII. Only the byte's value is shown, never raw input.
std::string DescribeByte(std::string_view id, size_t offset) {
  const auto c = static_cast<unsigned char>(id[offset]);
  if (c > 0x20 && c < 0x7F) {
    return absl::StrFormat("'%c' (byte 0x%02X) at offset %u", c, c, offset);
  }
  return absl::StrFormat("byte 0x%02X at offset %u", c, offset);
}

}  // namespace

std::string UserIdProblem(std::string_view user_id) {
  const internal::UserIdCheck check = internal::CheckUserId(user_id);
  switch (check.defect) {
    case UserIdDefect::kNone:
      return std::string();
    case UserIdDefect::kNoSigil:
      return "no leading '@'";
    case UserIdDefect::kTooLong:
      return absl::StrCat("longer than ", kMaxUserIdBytes, " bytes (",
                          user_id.size(), " bytes)");
    case UserIdDefect::kNoColon:
      return "no ':server' part";
    case UserIdDefect::kEmptyLocalpart:
      return "empty localpart";
    case UserIdDefect::kLocalpartByte:
      return absl::StrCat(
          "the localpart may hold only printable ASCII without spaces "
          "(0x21-0x7E), not ",
          DescribeByte(user_id, check.offset));
    case UserIdDefect::kEmptyServer:
      return "empty server name after ':'";
    case UserIdDefect::kUnclosedBracket:
      return "'[' without ']'";
    case UserIdDefect::kNotIpv6:
      return "the bracketed server name is not an IPv6 address";
    case UserIdDefect::kTextAfterBracket:
      return absl::StrCat("unexpected text after ']': ",
                          DescribeByte(user_id, check.offset));
    case UserIdDefect::kEmptyHost:
      return "empty server name before ':port'";
    case UserIdDefect::kHostByte:
      return absl::StrCat(
          "the server name may hold only letters, digits, '.' and '-', not ",
          DescribeByte(user_id, check.offset));
    case UserIdDefect::kEmptyPort:
      return "empty port after ':'";
    case UserIdDefect::kBadPort:
      return absl::StrCat(
          "the port is not a number from 1 to 65535: ",
          internal::QuoteForError(user_id.substr(check.offset)));
  }
  return "not a Matrix user ID";  // unreachable: every defect is named above
}

}  // namespace mxlimit
