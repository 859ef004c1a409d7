// The `mxlimit` command-line tool: one subcommand per src/cli/*_command.cc,
// registered through src/cli/commands.h.
//
// Parsing is here and only here. CLI11's own handling (CLI11_PARSE) prints
// --help and --version with unchecked stream writes and its errors without
// our prefix, so main catches its exceptions itself: help and version go
// through a checked `Output`, and every parse error becomes one line
// `mxlimit <subcommand>: ...` (`mxlimit: ...` before a subcommand is named).

#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mxlimit/version.h"
#include "src/cli/commands.h"
#include "src/cli/output.h"
#include "src/util/quote.h"

namespace mxlimit::cli {
namespace {

// The subcommand being parsed when `error` was thrown ("" before one).
std::string CommandOf(const CLI::App& app) {
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  return parsed.empty() ? std::string() : parsed.back()->get_name();
}

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
  }
  return names;
}

// The first argument that is not an option, if it names no subcommand.
std::string UnknownCommand(const CLI::App& app, int argc, char** argv) {
  const std::vector<std::string> names = CommandNames(app);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.empty() || arg[0] == '-') continue;
    for (const std::string& name : names) {
      if (arg == name) return {};
    }
    return std::string(arg);
  }
  return {};
}

// One line for a parse error, naming the subcommand and where to look.
std::string UsageError(const CLI::App& app, const CLI::Error& error, int argc,
                       char** argv) {
  const std::string command = CommandOf(app);
  const std::string help = command.empty()
                               ? "mxlimit --help"
                               : absl::StrCat("mxlimit ", command, " --help");
  std::string message = error.what();
  if (command.empty()) {
    const std::string names = absl::StrJoin(CommandNames(app), ", ");
    if (std::string unknown = UnknownCommand(app, argc, argv);
        !unknown.empty()) {
      message =
          absl::StrCat("unknown subcommand ", internal::QuoteForError(unknown),
                       "; expected one of ", names);
    } else if (error.get_name() == "RequiredError") {
      message = absl::StrCat("a subcommand is required: one of ", names);
    }
  }
  return absl::StrCat(message, " (see '", help, "')");
}

int Main(int argc, char** argv) {
  CLI::App app{"mxlimit: rate limiting for Matrix homeservers", "mxlimit"};
  app.footer(
      "Exit status: 0 success, 1 a finding (invalid policy file, read or "
      "write error), 2 a usage error. 'mxlimit SUBCOMMAND --help' lists a "
      "subcommand's options; docs/cli.md describes every subcommand, its "
      "output and examples.");
  app.set_version_flag("--version",
                       absl::StrCat("mxlimit ", std::string(kVersion)),
                       "Print the version (mxlimit/version.h) and exit");
  app.require_subcommand(1);
  int exit_code = kExitOk;
  RegisterNormalize(app, exit_code);
  RegisterExplain(app, exit_code);
  RegisterCheckConfig(app, exit_code);
  RegisterReplay(app, exit_code);
  RegisterAdmin(app, exit_code);

  // The subcommand's callback runs inside parse and leaves its code in
  // `exit_code`.
  try {
    app.parse(argc, argv);
    return exit_code;
  } catch (const CLI::Success& success) {  // --help, --version
    std::ostringstream text;
    std::ostringstream ignored;
    app.exit(success, text, ignored);
    Output out(CommandOf(app));
    out.Append(text.str());
    return out.Finish() ? kExitOk : kExitFinding;
  } catch (const CLI::ParseError& error) {
    PrintError(CommandOf(app), UsageError(app, error, argc, argv));
    return kExitUsage;
  }
}

}  // namespace
}  // namespace mxlimit::cli

// Main handles CLI11's exceptions; anything else (std::bad_alloc, say) would
// otherwise end in std::terminate without a word, so it is reported here,
// with the tool's prefix, as a failure.
int main(int argc, char** argv) {
  try {
    return mxlimit::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mxlimit: internal error: %s\n", e.what());
  } catch (...) {
    std::fputs("mxlimit: internal error\n", stderr);
  }
  return mxlimit::cli::kExitFinding;
}
