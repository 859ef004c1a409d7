// Internal to mxlimit::config: typed, position-aware reading of yaml-cpp nodes.
//
// yaml-cpp hands us untyped scalars and throws on conversion; the config
// loader instead wants every problem in the file, each pinned to its line and
// column. These helpers check one node at a time, record an error in
// `ConfigErrors` when it does not fit, and return std::nullopt so the caller
// simply carries on with the next field.

#ifndef MXLIMIT_SRC_CONFIG_YAML_FIELDS_H_
#define MXLIMIT_SRC_CONFIG_YAML_FIELDS_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mxlimit::config_internal {

// Every error found in one file, with its 1-based position (0 = unknown).
// Keeps the text of the first kKeptErrors and only counts the rest: a file of
// garbage may hold hundreds of thousands of errors, and only the first
// kMaxConfigErrorsReported (by position) are shown. Errors arrive nearly in
// file order, so keeping ten times as many as are shown keeps the right ones.
class ConfigErrors {
 public:
  static constexpr size_t kKeptErrors = 1000;

  ConfigErrors() = default;
  // `label` starts every message, e.g. "warning: " for a list of warnings.
  explicit ConfigErrors(std::string_view label) : label_(label) {}

  void Add(const YAML::Mark& mark, std::string message);
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  // "FILE:LINE:COL: message" lines sorted by position, at most
  // kMaxConfigErrorsReported of them, then a count of the rest.
  std::string Render(std::string_view file_name) const;
  // The same lines, one string each; the last counts the rest as "N more
  // `noun` not shown".
  std::vector<std::string> Lines(std::string_view file_name,
                                 std::string_view noun = "errors") const;

 private:
  struct Error {
    int line;
    int column;
    std::string message;
  };
  std::string label_;
  std::vector<Error> errors_;
  size_t count_ = 0;
};

// One `key: value` pair of a checked map. `path` names the value for
// messages, e.g. "tables.ip.capacity" or "policies[2].rate_limit.unit".
struct Field {
  std::string name;
  std::string path;
  YAML::Node key;
  YAML::Node value;

  // Where errors about the value point: the value itself, or its key when the
  // value is empty (yaml-cpp puts an empty value's mark on the next token).
  YAML::Mark mark() const;
};

// The fields of a map, in file order, minus unknown and duplicate keys (each
// of those is reported: unknown ones with the nearest known key as a
// suggestion, duplicates with the line of the first).
class MapFields {
 public:
  // Reports an error and yields no fields unless `node` is a map. An empty
  // (null) node is an empty map when `null_is_empty`.
  MapFields(const YAML::Node& node, std::string_view path,
            std::span<const std::string_view> known_keys, bool null_is_empty,
            ConfigErrors& errors)
      : MapFields(node, node.Mark(), path, known_keys, null_is_empty, errors) {}
  // The value of `field`, reported at `field.mark()` when it is not a map: an
  // empty value's own mark is the next token's, often on a later line.
  MapFields(const Field& field, std::span<const std::string_view> known_keys,
            bool null_is_empty, ConfigErrors& errors)
      : MapFields(field.value, field.mark(), field.path, known_keys,
                  null_is_empty, errors) {}

  const Field* Find(std::string_view name) const;
  const std::vector<Field>& fields() const { return fields_; }

 private:
  MapFields(const YAML::Node& node, const YAML::Mark& mark,
            std::string_view path, std::span<const std::string_view> known_keys,
            bool null_is_empty, ConfigErrors& errors);

  std::vector<Field> fields_;
};

// "a map", "a list", "nothing", or the scalar's text (quoted when the file
// quoted it, escaped and cut to 64 bytes), for "got ..." messages.
std::string DescribeValue(const YAML::Node& node);

// The elements of a list, or none (and an error) when `field` holds another
// kind of value. An empty value is an empty list.
std::vector<YAML::Node> ReadList(const Field& field, std::string_view expected,
                                 ConfigErrors& errors);

// One string of a list read by ReadStringList.
struct ListString {
  std::string path;  // e.g. "exempt.ips[2]"
  YAML::Mark mark;
  std::string text;
};

// The strings of a list of strings. Elements that are not strings are
// reported (as not being `item_expected`) and left out; a value that is not a
// list is reported as not being `list_expected`.
std::vector<ListString> ReadStringList(const Field& field,
                                       std::string_view list_expected,
                                       std::string_view item_expected,
                                       ConfigErrors& errors);

// A scalar's text. Any scalar qualifies (YAML's `60` is also the string "60");
// maps, lists and empty values are errors.
std::optional<std::string> ReadString(const YAML::Node& node,
                                      const YAML::Mark& mark,
                                      std::string_view path,
                                      std::string_view expected,
                                      ConfigErrors& errors);
inline std::optional<std::string> ReadString(const Field& field,
                                             std::string_view expected,
                                             ConfigErrors& errors) {
  return ReadString(field.value, field.mark(), field.path, expected, errors);
}

// `true` or `false` (also `True`/`TRUE`/`False`/`FALSE`, as YAML 1.2 has it).
// YAML 1.1's yes/no/on/off are errors: they are the usual source of surprises.
std::optional<bool> ReadBool(const Field& field, ConfigErrors& errors);

// A plain decimal integer that fits int64 (quoted numbers, floats, hex and
// octal are errors). `expected` completes "expected ..." in the message, e.g.
// "an integer from 1 to 100". Does not check a range.
std::optional<int64_t> ReadInteger(const Field& field,
                                   std::string_view expected,
                                   ConfigErrors& errors);

// ReadInteger plus a check that the value lies in [min, max].
std::optional<int64_t> ReadIntegerInRange(const Field& field, int64_t min,
                                          int64_t max, ConfigErrors& errors);

// A plain (unquoted, untagged) fixed-point decimal such as 10, 0.1 or 2.5
// within [min, max], or within (min, max] when `min_open`. `expected`
// completes "expected ..." in the message.
std::optional<double> ReadDecimal(const Field& field, double min, double max,
                                  bool min_open, std::string_view expected,
                                  ConfigErrors& errors);

// The candidate nearest to `word` by edit distance (a swap of two neighbours
// counts as one edit), if it is close enough to be a likely typo.
std::optional<std::string_view> NearestWord(
    std::string_view word, std::span<const std::string_view> candidates);

// "a, b, c", for lists of what was expected.
std::string JoinWords(std::span<const std::string_view> words);

// "5ms", "250us", "1s": a plain decimal count and a unit. In microseconds.
std::optional<int64_t> ParseDuration(std::string_view text);

// A duration in [min_us, max_us], a whole number of `granularity_us`, in
// microseconds. `expected` completes "expected ..."; a bare number gets a
// note on the missing unit.
std::optional<int64_t> ReadDuration(const Field& field, int64_t min_us,
                                    int64_t max_us, int64_t granularity_us,
                                    std::string_view expected,
                                    ConfigErrors& errors);

}  // namespace mxlimit::config_internal

#endif  // MXLIMIT_SRC_CONFIG_YAML_FIELDS_H_
