// -----------------------------------------------------------------------------
// File: cli/commands.h
// -----------------------------------------------------------------------------
//
// The subcommands of the `mxlimit` tool. Each lives in its own
// `<name>_command.cc` with an options struct and a `Run<Name>` function, and
// exposes one `Register<Name>` here that adds the subcommand to the app and
// arranges for its exit code to land in `exit_code` when it runs. main.cc
// calls every Register function, then parses; a new subcommand is one new
// file plus one line here and one in main.cc.
//
// Exit codes (shared by every subcommand): 0 success, 1 a finding (invalid
// input, a denied request, a bad config, a read or write error), 2 a usage
// error. Results go through one `Output` and errors through `PrintError`
// (output.h), so every write is checked and every error line starts
// `mxlimit <subcommand>: `.
//
// Example:
//   CLI::App app{"...", "mxlimit"};
//   int exit_code = mxlimit::cli::kExitOk;
//   mxlimit::cli::RegisterNormalize(app, exit_code);

#ifndef MXLIMIT_CLI_COMMANDS_H_
#define MXLIMIT_CLI_COMMANDS_H_

namespace CLI {
class App;
}  // namespace CLI

namespace mxlimit::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFinding = 1;
inline constexpr int kExitUsage = 2;

// `mxlimit normalize [TARGET...] | --list`: route keys for request targets
// (arguments, or one `METHOD TARGET` / `TARGET` per stdin line).
void RegisterNormalize(CLI::App& app, int& exit_code);

// `mxlimit explain [--config F] [--ip ADDR] [--user USER] METHOD TARGET`:
// the route, matching policies, the chosen one per scope and why, buckets.
void RegisterExplain(CLI::App& app, int& exit_code);

// `mxlimit check-config F`: validate a policy file; errors as F:LINE:COL.
void RegisterCheckConfig(CLI::App& app, int& exit_code);

// `mxlimit replay [--config F] [--format …] [--decisions] [--json] FILE|-`:
// run an access log through a Limiter and report.
void RegisterReplay(CLI::App& app, int& exit_code);

// `mxlimit admin list|set|clear|reset`: call a running mxlimitd's admin API.
void RegisterAdmin(CLI::App& app, int& exit_code);

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_COMMANDS_H_
