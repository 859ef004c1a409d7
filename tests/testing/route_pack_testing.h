// Helpers for the route pack tests: a route table assembled from built-in
// packs by the combining rules of src/route/route_packs.h, owned by the test,
// and the identifier shapes the per-pack route lists are instantiated with.
//
// NOTE: this is the tests' own merge of packs, written from the contract
// line by line and independently of the library's (MergeRouteTable in
// src/route/route_table_builder.h); route_packs_test checks that the two
// agree for every combination of packs.

#ifndef MXLIMIT_TESTS_TESTING_ROUTE_PACK_TESTING_H_
#define MXLIMIT_TESTS_TESTING_ROUTE_PACK_TESTING_H_

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "src/route/route_packs.h"
#include "src/route/route_trie.h"

namespace mxlimit::testing {

// The built-in pack named `name`; throws when there is none.
inline const internal::RoutePack& BuiltinPack(std::string_view name) {
  for (const internal::RoutePack& pack : internal::BuiltinRoutePacks()) {
    if (pack.name == name) return pack;
  }
  throw std::invalid_argument("no route pack named " + std::string(name));
}

// Every built-in pack name, in canonical order.
inline std::vector<std::string_view> AllPackNames() {
  std::vector<std::string_view> names;
  for (const internal::RoutePack& pack : internal::BuiltinRoutePacks()) {
    names.push_back(pack.name);
  }
  return names;
}

// The union of some built-in packs as one route table:
//   * templates of the named packs in canonical pack order (file order within
//     a pack), a template listed by several packs once, at its first place;
//   * the forms of the named packs whose template is active;
//   * the prefix aliases of the named packs;
//   * the MXLIMIT_MAY_BE_EMPTY names of every pack.
// Neither copyable nor movable: `spec()` views the member vectors.
class PackTable {
 public:
  explicit PackTable(std::span<const std::string_view> names) {
    for (std::string_view name : names) BuiltinPack(name);  // must exist
    std::set<std::string_view> seen;
    for (const internal::RoutePack& pack : internal::BuiltinRoutePacks()) {
      for (std::string_view name : pack.table.may_be_empty) {
        if (std::find(may_be_empty_.begin(), may_be_empty_.end(), name) ==
            may_be_empty_.end()) {
          may_be_empty_.push_back(name);
        }
      }
      if (std::find(names.begin(), names.end(), pack.name) == names.end()) {
        continue;
      }
      names_.push_back(pack.name);
      for (std::string_view route_template : pack.table.templates) {
        if (seen.insert(route_template).second) {
          templates_.push_back(route_template);
          pack_of_[route_template] = pack.name;
        }
      }
      for (const internal::PrefixAliasRow& alias : pack.table.prefix_aliases) {
        aliases_.push_back(alias);
      }
    }
    for (const internal::RoutePack& pack : internal::BuiltinRoutePacks()) {
      if (std::find(names_.begin(), names_.end(), pack.name) == names_.end()) {
        continue;
      }
      for (const internal::RouteFormRow& form : pack.table.forms) {
        if (seen.contains(form.route_template)) forms_.push_back(form);
      }
    }
    spec_ = {templates_, forms_, aliases_, may_be_empty_};
  }
  PackTable(std::initializer_list<std::string_view> names)
      : PackTable(
            std::span<const std::string_view>(names.begin(), names.size())) {}
  PackTable(const PackTable&) = delete;
  PackTable& operator=(const PackTable&) = delete;

  // The packs a limiter uses by default, and every built-in pack.
  static const PackTable& Default() {
    static const auto* table = new PackTable(internal::DefaultRoutePacks());
    return *table;
  }
  static const PackTable& All() {
    static const auto* names =
        new std::vector<std::string_view>(AllPackNames());
    static const auto* table = new PackTable(*names);
    return *table;
  }

  const internal::RouteTableSpec& spec() const { return spec_; }
  // The active packs, in canonical order.
  std::span<const std::string_view> names() const { return names_; }
  // The pack whose template is `key` ("" when it is not a key here).
  std::string_view PackOf(std::string_view key) const {
    auto it = pack_of_.find(key);
    return it == pack_of_.end() ? std::string_view() : it->second;
  }

 private:
  std::vector<std::string_view> names_;
  std::vector<std::string_view> templates_;
  std::vector<internal::RouteFormRow> forms_;
  std::vector<internal::PrefixAliasRow> aliases_;
  std::vector<std::string_view> may_be_empty_;
  std::map<std::string_view, std::string_view, std::less<>> pack_of_;
  internal::RouteTableSpec spec_;
};

// The trie of `table`; throws (failing the test) when it does not build.
inline internal::RouteTrie BuildPackTrie(const PackTable& table) {
  absl::StatusOr<internal::RouteTrie> trie =
      internal::RouteTrie::Build(table.spec());
  if (!trie.ok())
    throw std::runtime_error(std::string(trie.status().message()));
  return *std::move(trie);
}

// Two realistic spellings of the identifier a placeholder stands for, chosen
// by its name: the classic form (often percent-encoded, as clients send it)
// and a second, differently shaped one (a room v12 room ID, a hash event ID,
// a raw sigil). Unknown names get a plain and an encoded value.
inline std::vector<std::string> TwoShapesFor(std::string_view placeholder) {
  static const auto* shapes =
      new std::map<std::string, std::vector<std::string>, std::less<>>{
          {"roomId",
           {"%21abcdef%3Aexample.org",
            "!Zq3vJ8wQ9cLxYzKp3vJ8wQ9cLxYzKp3vJ8wQ9cLxYzK"}},
          {"roomIdOrAlias",
           {"%23room%3Aexample.org",
            "!Zq3vJ8wQ9cLxYzKp3vJ8wQ9cLxYzKp3vJ8wQ9cLxYzK"}},
          {"roomAlias", {"%23room%3Aexample.org", "#caf\xC3\xA9:example.org"}},
          {"userId", {"@alice:example.org", "%40user%3Aserver"}},
          {"eventId",
           {"%24abcdef%3Aexample.org",
            "$Rqnc-F-dvnEYJTyHq_iKxU2bZ1CI92-kuZq3a5lr5Zg"}},
          {"threadRootId",
           {"%24abcdef%3Aexample.org",
            "$Rqnc-F-dvnEYJTyHq_iKxU2bZ1CI92-kuZq3a5lr5Zg"}},
          {"serverName", {"example.org", "%5B2001%3Adb8%3A%3A1%5D%3A8448"}},
          {"destination", {"example.org", "matrix.example.net%3A8448"}},
          {"mediaId", {"AbCdEfGh123", "2024-01-01_x-y"}},
          {"txnId", {"m1700000000000.1", "txn%2F1"}},
          {"deviceId", {"ABCDEFGHIJ", "dev%20ice"}},
          {"token", {"Ab12_-.~", "syt_dXNlcg_abc_123"}},
          {"reportId", {"1", "18446744073709551615"}},
      };
  auto it = shapes->find(placeholder);
  if (it != shapes->end()) return it->second;
  return {"value1", "enc%2Fo%3Aded"};
}

// Every instantiation of `route_template` with TwoShapesFor: the first shape
// everywhere, then the second everywhere (two paths per template).
inline std::vector<std::string> InstantiateTwoShapes(
    std::string_view route_template) {
  std::vector<std::string> out;
  for (size_t shape = 0; shape < 2; ++shape) {
    std::string path;
    for (size_t i = 0; i < route_template.size(); ++i) {
      if (route_template[i] != '{') {
        path.push_back(route_template[i]);
        continue;
      }
      size_t close = route_template.find('}', i);
      path += TwoShapesFor(route_template.substr(i + 1, close - i - 1))[shape];
      i = close;
    }
    out.push_back(std::move(path));
  }
  return out;
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_ROUTE_PACK_TESTING_H_
