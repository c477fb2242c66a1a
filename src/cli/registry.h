// The commands of schedhot, each registered from its own src/cli/cmd_<name>.cpp: its name,
// its line of --help, its place among the others, its options and the call to run after
// parsing. main() builds the CLI11 app from this list (and so do --help, schedhot(1) and the
// completions, src/docgen), so a new command is a cmd_<name>.cpp here plus its entry point
// below src/cli; main.cpp names no command.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace schedhot::cli {

/// The command line main() was given, for the calls that keep it (record, serve and top
/// store it; serve reads how --per-cpu was spelled from it).
struct CommandLine {
  int argc = 0;
  char** argv = nullptr;
  /// The arguments joined by single spaces ("schedhot record -o x.shot").
  std::string text() const;
};

/// What a command does once its options are parsed: its exit status (0, 1 runtime, 2 usage,
/// 3 diff's significant change, 130 interrupted). It may throw UsageError, LiveError or any
/// std::exception: main() prints them and maps them to a status.
using CommandCall = std::function<int(const CommandLine&)>;

/// One command of schedhot.
struct CommandSpec {
  const char* name;  ///< "report"
  const char* help;  ///< its line in --help and schedhot(1)
  int order;         ///< its place in --help, schedhot(1) and the completions (ascending)
  /// Adds the command's options to its CLI::App (made by main() with name and help) and
  /// returns the call to run when it is the command parsed. The options' values live in the
  /// call (captured), which main() keeps as long as the app.
  std::function<CommandCall(CLI::App&)> define;
};

/// Registers spec at static initialisation: one namespace-scope object in the command's
/// cli/cmd_<name>.cpp. (The src/cli files are the executable's own sources, not an archive's
/// members, so the linker keeps every one.)
struct RegisterCommand {
  explicit RegisterCommand(CommandSpec spec);
};

/// Every registered command, by order (then name).
std::vector<CommandSpec> registered_commands();

}  // namespace schedhot::cli
