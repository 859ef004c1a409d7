#include "src/config/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/config.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/util/quote.h"

namespace mxlimit::config_internal {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

// yaml-cpp tags a quoted scalar "!" and an explicit `!!str` with the core
// schema's string tag; plain scalars are "?".
bool IsQuoted(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  return tag == "!" || tag == "tag:yaml.org,2002:str";
}

int Line(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }
int Column(const YAML::Mark& mark) {
  return mark.is_null() ? 0 : mark.column + 1;
}

// Optimal string alignment distance: Levenshtein plus adjacent swaps.
size_t EditDistance(std::string_view a, std::string_view b) {
  const size_t width = b.size() + 1;
  std::vector<size_t> cells((a.size() + 1) * width);
  auto d = [&](size_t i, size_t j) -> size_t& { return cells[i * width + j]; };
  for (size_t i = 0; i <= a.size(); ++i) d(i, 0) = i;
  for (size_t j = 0; j <= b.size(); ++j) d(0, j) = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d(i, j) =
          std::min({d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d(i, j) = std::min(d(i, j), d(i - 2, j - 2) + 1);
      }
    }
  }
  return d(a.size(), b.size());
}

// "the top level" or "tables.ip", for messages about a map's keys.
std::string MapName(std::string_view path) {
  return path.empty() ? "the top level" : std::string(path);
}

}  // namespace

void ConfigErrors::Add(const YAML::Mark& mark, std::string message) {
  ++count_;
  if (errors_.size() < kKeptErrors) {
    errors_.push_back(Error{Line(mark), Column(mark), std::move(message)});
  }
}

std::vector<std::string> ConfigErrors::Lines(std::string_view file_name,
                                             std::string_view noun) const {
  std::vector<const Error*> sorted;
  sorted.reserve(errors_.size());
  for (const Error& e : errors_) sorted.push_back(&e);
  std::stable_sort(
      sorted.begin(), sorted.end(), [](const Error* a, const Error* b) {
        return std::pair(a->line, a->column) < std::pair(b->line, b->column);
      });
  std::vector<std::string> out;
  size_t shown = std::min(sorted.size(), kMaxConfigErrorsReported);
  for (size_t i = 0; i < shown; ++i) {
    const Error& e = *sorted[i];
    if (e.line > 0) {
      out.push_back(absl::StrCat(ToAbsl(file_name), ":", e.line, ":", e.column,
                                 ": ", label_, e.message));
    } else {
      out.push_back(absl::StrCat(ToAbsl(file_name), ": ", label_, e.message));
    }
  }
  if (count_ > shown) {
    out.push_back(absl::StrCat(ToAbsl(file_name), ": ", count_ - shown,
                               " more ", ToAbsl(noun), " not shown"));
  }
  return out;
}

std::string ConfigErrors::Render(std::string_view file_name) const {
  std::string out;
  for (const std::string& line : Lines(file_name)) {
    absl::StrAppend(&out, out.empty() ? "" : "\n", line);
  }
  return out;
}

YAML::Mark Field::mark() const {
  return value.IsNull() ? key.Mark() : value.Mark();
}

MapFields::MapFields(const YAML::Node& node, const YAML::Mark& mark,
                     std::string_view path,
                     std::span<const std::string_view> known_keys,
                     bool null_is_empty, ConfigErrors& errors) {
  if (node.IsNull() && null_is_empty) return;
  if (!node.IsMap()) {
    errors.Add(mark,
               absl::StrCat(path.empty() ? "top level" : ToAbsl(path), ": got ",
                            DescribeValue(node), ", expected a map with keys ",
                            JoinWords(known_keys)));
    return;
  }
  for (const auto& pair : node) {
    const YAML::Node& key = pair.first;
    if (!key.IsScalar()) {
      errors.Add(key.Mark(),
                 absl::StrCat("a key in ", MapName(path), " is ",
                              DescribeValue(key), ", expected a plain name"));
      continue;
    }
    const std::string& name = key.Scalar();
    std::string field_path =
        path.empty() ? name : absl::StrCat(ToAbsl(path), ".", name);
    if (std::find(known_keys.begin(), known_keys.end(), name) ==
        known_keys.end()) {
      std::string message = absl::StrCat("unknown key ", QuoteForError(name),
                                         " in ", MapName(path));
      if (std::optional<std::string_view> near =
              NearestWord(name, known_keys)) {
        absl::StrAppend(&message, " (did you mean \"", ToAbsl(*near), "\"?)");
      }
      absl::StrAppend(&message, "; known keys: ", JoinWords(known_keys));
      errors.Add(key.Mark(), std::move(message));
      continue;
    }
    if (const Field* first = Find(name)) {
      // yaml-cpp keeps both pairs; silently taking either would hide a typo.
      errors.Add(key.Mark(),
                 absl::StrCat("duplicate key ", QuoteForError(name), " in ",
                              MapName(path), " (first given at line ",
                              Line(first->key.Mark()), ")"));
      continue;
    }
    fields_.push_back(Field{name, std::move(field_path), key, pair.second});
  }
}

const Field* MapFields::Find(std::string_view name) const {
  for (const Field& f : fields_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string DescribeValue(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& text = node.Scalar();
  if (IsQuoted(node)) return absl::StrCat("the string ", QuoteForError(text));
  // Plain scalars print as written unless escaping or cutting is needed.
  // Compare the bytes, not just the size: escaping can add exactly as many
  // bytes as cutting removes, and raw newlines would then forge error lines.
  std::string quoted = QuoteForError(text);
  if (!text.empty() && quoted.size() == text.size() + 2 &&
      std::string_view(quoted).substr(1, text.size()) == text) {
    return text;
  }
  return quoted;
}

std::vector<YAML::Node> ReadList(const Field& field, std::string_view expected,
                                 ConfigErrors& errors) {
  std::vector<YAML::Node> items;
  if (field.value.IsNull()) return items;
  if (!field.value.IsSequence()) {
    errors.Add(field.mark(),
               absl::StrCat(field.path, ": got ", DescribeValue(field.value),
                            ", expected ", ToAbsl(expected)));
    return items;
  }
  for (const YAML::Node& item : field.value) items.push_back(item);
  return items;
}

std::vector<ListString> ReadStringList(const Field& field,
                                       std::string_view list_expected,
                                       std::string_view item_expected,
                                       ConfigErrors& errors) {
  std::vector<ListString> strings;
  std::vector<YAML::Node> items = ReadList(field, list_expected, errors);
  for (size_t i = 0; i < items.size(); ++i) {
    std::string path = absl::StrCat(field.path, "[", i, "]");
    std::optional<std::string> text =
        ReadString(items[i], items[i].Mark(), path, item_expected, errors);
    if (text.has_value()) {
      strings.push_back(
          ListString{std::move(path), items[i].Mark(), *std::move(text)});
    }
  }
  return strings;
}

std::optional<std::string> ReadString(const YAML::Node& node,
                                      const YAML::Mark& mark,
                                      std::string_view path,
                                      std::string_view expected,
                                      ConfigErrors& errors) {
  if (!node.IsScalar()) {
    errors.Add(mark, absl::StrCat(ToAbsl(path), ": got ", DescribeValue(node),
                                  ", expected ", ToAbsl(expected)));
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<bool> ReadBool(const Field& field, ConfigErrors& errors) {
  const YAML::Node& v = field.value;
  if (v.IsScalar() && !IsQuoted(v)) {
    const std::string& s = v.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  errors.Add(field.mark(), absl::StrCat(field.path, ": got ", DescribeValue(v),
                                        ", expected true or false"));
  return std::nullopt;
}

std::optional<int64_t> ReadInteger(const Field& field,
                                   std::string_view expected,
                                   ConfigErrors& errors) {
  const YAML::Node& v = field.value;
  if (v.IsScalar() && !IsQuoted(v)) {
    std::string_view s = v.Scalar();
    // YAML 1.2 allows a leading '+'; from_chars does not.
    if (s.size() > 1 && s[0] == '+' && s[1] != '-') s.remove_prefix(1);
    int64_t value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) {
      return value;
    }
  }
  errors.Add(field.mark(), absl::StrCat(field.path, ": got ", DescribeValue(v),
                                        ", expected ", ToAbsl(expected)));
  return std::nullopt;
}

std::optional<int64_t> ReadIntegerInRange(const Field& field, int64_t min,
                                          int64_t max, ConfigErrors& errors) {
  std::string expected = absl::StrCat("an integer from ", min, " to ", max);
  std::optional<int64_t> value = ReadInteger(field, expected, errors);
  if (value.has_value() && (*value < min || *value > max)) {
    errors.Add(field.mark(), absl::StrCat(field.path, ": got ", *value,
                                          ", expected ", expected));
    return std::nullopt;
  }
  return value;
}

std::optional<double> ReadDecimal(const Field& field, double min, double max,
                                  bool min_open, std::string_view expected,
                                  ConfigErrors& errors) {
  std::optional<std::string> text = ReadString(field, expected, errors);
  if (!text.has_value()) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(),
                                   value, std::chars_format::fixed);
  const bool in_range = std::isfinite(value) &&
                        (min_open ? value > min : value >= min) && value <= max;
  // A quoted "10" is a string in YAML: as with integers, not a number.
  const bool tagged =
      field.value.Tag() == "!" || field.value.Tag() == "tag:yaml.org,2002:str";
  if (ec != std::errc() || end != text->data() + text->size() || !in_range ||
      tagged) {
    errors.Add(field.mark(),
               absl::StrCat(field.path, ": got ", DescribeValue(field.value),
                            ", expected ", ToAbsl(expected)));
    return std::nullopt;
  }
  return value;
}

std::string JoinWords(std::span<const std::string_view> words) {
  std::string out;
  for (std::string_view w : words) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", ToAbsl(w));
  }
  return out;
}

std::optional<std::string_view> NearestWord(
    std::string_view word, std::span<const std::string_view> candidates) {
  if (word.size() > 64) return std::nullopt;  // Not a typo of a short key.
  // One edit for short words, two for long ones: beyond that a "suggestion"
  // is a guess (FETCH is two edits from PATCH).
  std::optional<std::string_view> best;
  size_t best_distance = 0;
  for (std::string_view c : candidates) {
    const size_t allowed = c.size() >= 8 ? 2 : 1;
    // The distance is at least the difference in length.
    if (std::max(word.size(), c.size()) - std::min(word.size(), c.size()) >
        allowed) {
      continue;
    }
    const size_t d = EditDistance(word, c);
    if (d <= allowed && (!best.has_value() || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

// "5ms", "250us", "1s": a plain decimal count and a unit. In microseconds.
std::optional<int64_t> ParseDuration(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    int64_t micros;
  };
  static constexpr Unit kUnits[] = {{"us", 1}, {"ms", 1000}, {"s", 1'000'000}};
  for (const Unit& unit : kUnits) {
    if (text.size() <= unit.suffix.size() ||
        text.substr(text.size() - unit.suffix.size()) != unit.suffix) {
      continue;
    }
    const std::string_view count =
        text.substr(0, text.size() - unit.suffix.size());
    int64_t value = 0;
    auto [end, ec] =
        std::from_chars(count.data(), count.data() + count.size(), value);
    if (ec != std::errc() || end != count.data() + count.size() || value < 0 ||
        value > INT64_MAX / unit.micros) {
      return std::nullopt;
    }
    return value * unit.micros;
  }
  return std::nullopt;
}

// A duration in [min_us, max_us], a whole number of `granularity_us`.
// `expected` completes "expected ...".
std::optional<int64_t> ReadDuration(const Field& field, int64_t min_us,
                                    int64_t max_us, int64_t granularity_us,
                                    std::string_view expected,
                                    ConfigErrors& errors) {
  std::optional<std::string> text = ReadString(field, expected, errors);
  if (!text.has_value()) return std::nullopt;
  std::optional<int64_t> micros = ParseDuration(*text);
  if (!micros.has_value() || *micros < min_us || *micros > max_us ||
      *micros % granularity_us != 0) {
    std::string message =
        absl::StrCat(field.path, ": got ", DescribeValue(field.value),
                     ", expected ", ToAbsl(expected));
    // A bare number is the likeliest slip: say which unit it lacks.
    int64_t bare = 0;
    auto [end, ec] =
        std::from_chars(text->data(), text->data() + text->size(), bare);
    if (ec == std::errc() && end == text->data() + text->size()) {
      absl::StrAppend(&message, " (a duration needs a unit: us, ms or s)");
    }
    errors.Add(field.mark(), std::move(message));
    return std::nullopt;
  }
  return micros;
}

}  // namespace mxlimit::config_internal
