#include "src/cli/choice.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/util/quote.h"

namespace mxlimit::cli {

CLI::Validator OneOf(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> mapping;
  mapping.reserve(names.size());
  for (const std::string& name : names) mapping.emplace_back(name, name);
  const CLI::CheckedTransformer to_name(std::move(mapping), CLI::ignore_case);
  const std::string expected =
      absl::StrCat("expected one of ", absl::StrJoin(names, ", "));
  return CLI::Validator(
      [to_name, expected](std::string& value) {
        const std::string got = value;
        if (to_name(value).empty()) return std::string();
        return absl::StrCat("got ", internal::QuoteForError(got), ", ",
                            expected);
      },
      absl::StrCat("{", absl::StrJoin(names, ","), "}"));
}

}  // namespace mxlimit::cli
