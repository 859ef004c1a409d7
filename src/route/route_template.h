// -----------------------------------------------------------------------------
// File: route/route_template.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// The route table's template syntax, shared by the table's validation and
// expansion (src/route/route_template.cc) and the trie builder
// (src/route/route_trie.cc): a template is a path whose segments are literals
// or `{name}` placeholders.

#ifndef MXLIMIT_ROUTE_ROUTE_TEMPLATE_H_
#define MXLIMIT_ROUTE_ROUTE_TEMPLATE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace mxlimit::internal {

struct ParsedSegment {
  std::string_view text;  // the literal, or the placeholder's name
  bool placeholder = false;
};

// "." and "..": never a literal, never matched (the target is fallback).
inline bool IsDotSegment(const char* data, size_t size) {
  return (size == 1 && data[0] == '.') ||
         (size == 2 && data[0] == '.' && data[1] == '.');
}

// Splits `text` ("/_matrix/client/v3/rooms/{roomId}/state") into `out`;
// InvalidArgument names the template and what is wrong with it (a
// placeholder name used twice among them). The views point into `text`.
absl::Status ParseTemplate(std::string_view text,
                           std::vector<ParsedSegment>* out);

// What makes two templates serve the same paths: their literals and where
// their placeholders are, whatever the placeholders are called
// ("/rooms/{}/state").
std::string TemplateShape(const std::vector<ParsedSegment>& segments);
// The same, appended to `out`. Never longer than the template (a `{name}`
// becomes `{}`).
void AppendTemplateShape(const std::vector<ParsedSegment>& segments,
                         std::string* out);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ROUTE_ROUTE_TEMPLATE_H_
