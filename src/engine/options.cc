#include "mxlimit/options.h"

#include "absl/strings/str_cat.h"

namespace mxlimit {

absl::Status ValidateTableOptions(const TableOptions& t) {
  auto capacity = [](const char* field, size_t value) -> absl::Status {
    if (value >= 1 && value <= TableOptions::kMaxCapacity) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat(field, ": got ", value,
                                                   ", expected 1 to ",
                                                   TableOptions::kMaxCapacity));
  };
  absl::Status s = capacity("tables.ip.capacity", t.ip_capacity);
  if (!s.ok()) return s;
  s = capacity("tables.user.capacity", t.user_capacity);
  if (!s.ok()) return s;
  if (t.ipv4_prefix < 0 || t.ipv4_prefix > 32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tables.ip.ipv4_prefix: got ", t.ipv4_prefix, ", expected 0 to 32"));
  }
  if (t.ipv6_prefix < 0 || t.ipv6_prefix > 128) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tables.ip.ipv6_prefix: got ", t.ipv6_prefix, ", expected 0 to 128"));
  }
  return absl::OkStatus();
}

}  // namespace mxlimit
