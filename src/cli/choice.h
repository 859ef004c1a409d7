// -----------------------------------------------------------------------------
// File: cli/choice.h
// -----------------------------------------------------------------------------
//
// Options that take one of a few names (`replay --format`), so that a bad
// value is refused the same way everywhere: naming the value and every
// accepted one, e.g.
//   mxlimit replay: --format: got "xml", expected one of auto, tsv, synapse,
//   nginx
//
// Example:
//   cmd->add_option("--format", opts->format, "Log format")
//       ->transform(OneOf({"auto", "tsv", "synapse", "nginx"}));

#ifndef MXLIMIT_CLI_CHOICE_H_
#define MXLIMIT_CLI_CHOICE_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace mxlimit::cli {

// OneOf()
//
// A CLI11 transform accepting each of `names` in any case ("TSV" becomes
// "tsv"), built on CLI::CheckedTransformer; its own failure text ("Check xml
// value in {auto->auto,...} OR {...} FAILED") is replaced by one that reads
// as a sentence. The value is quoted and escaped, since it comes from the
// command line.
CLI::Validator OneOf(const std::vector<std::string>& names);

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_CHOICE_H_
