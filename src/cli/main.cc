// The `mxlimit` command-line tool: one subcommand per src/cli/*_command.cc,
// registered through src/cli/commands.h.

#include "CLI/CLI.hpp"
#include "src/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"mxlimit: rate limiting for Matrix homeservers", "mxlimit"};
  app.require_subcommand(1);
  int exit_code = mxlimit::cli::kExitOk;
  mxlimit::cli::RegisterNormalize(app, exit_code);
  mxlimit::cli::RegisterExplain(app, exit_code);
  mxlimit::cli::RegisterCheckConfig(app, exit_code);
  mxlimit::cli::RegisterReplay(app, exit_code);

  // CLI11_PARSE returns CLI11's own exit code for a parse error (105, 106,
  // ...). Every usage error must exit 2, --help 0; the subcommand's callback
  // runs inside the parse and leaves its code in `exit_code`.
  constexpr int kParsed = -1;
  const int parse_code = [&]() -> int {
    CLI11_PARSE(app, argc, argv);
    return kParsed;
  }();
  if (parse_code == kParsed) return exit_code;
  return parse_code == 0 ? mxlimit::cli::kExitOk : mxlimit::cli::kExitUsage;
}
