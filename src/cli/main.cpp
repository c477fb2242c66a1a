// schedhot: eBPF observability for the kernel's nohz, cpupri and tick-broadcast hot paths.
// Command-line front end only: the app built from the registered commands (cli/registry.h;
// each is its own cli/cmd_<name>.cpp), the parse, and the call of the command parsed.
#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/registry.h"
#include "docgen/docgen.h"

#ifndef SCHEDHOT_VERSION
#define SCHEDHOT_VERSION "dev"
#endif

using namespace schedhot::cli;

int main(int argc, char** argv) {
  // A closed stdin, stdout or stderr (`>&-`) is held by a read-only /dev/null: otherwise the
  // next open() (a recording, a BPF map) would take its number and get the tables or the
  // error lines written into it. Writes then fail with EBADF and are said as such.
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (n >= 0 && n != fd) {
        ::dup2(n, fd);
        ::close(n);
      }
    }
  CLI::App app{"schedhot: per-CPU rates and latency percentiles for the scheduler's "
               "nohz, cpupri and tick-broadcast hot paths"};
  app.set_version_flag("--version", SCHEDHOT_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  std::vector<std::pair<CLI::App*, CommandCall>> calls;  // every command (cli/registry.h), in --help's order
  for (const CommandSpec& spec : registered_commands()) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.help);
    calls.emplace_back(sub, spec.define(*sub));
  }

  // The build writes the man page and the shell completions from the definitions above
  // (src/docgen/docgen.h); not a command, so not in --help.
  if (argc >= 2 && std::string(argv[1]) == "--docgen") return schedhot::docgen(app, argc - 2, argv + 2);
  {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known |= argc > 1 && sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    const std::string first = argc > 1 ? argv[1] : "";
    if (argc < 2) {
      err(fmt::format("a command is needed (one of: {}; see schedhot --help)", names));
      return 2;
    }
    if (first[0] != '-' && !known) {
      err(fmt::format("unknown command '{}' (one of: {}; see schedhot --help)", first, names));
      return 2;
    }
    if (first[0] == '-' && first != "-h" && first != "--help" && first != "--version") {
      err(fmt::format("'{}' before the command: options follow it (schedhot COMMAND [OPTIONS]; commands: {})", first,
                      names));
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The subcommand's own --help lists its options and their choices.
    std::string help = "schedhot --help";
    for (const CLI::App* sub : app.get_subcommands())
      if (sub->parsed()) help = fmt::format("schedhot {} --help", sub->get_name());
    err(fmt::format("{} (see {})", e.what(), help));
    return 2;
  }
  install_signal_handlers();
  for (const CLI::App* sub : app.get_subcommands())
    if (sub->parsed()) set_usage_command(sub->get_name());  // usage errors after parsing point to its --help
  int rc = 2;
  try {
    for (const auto& [sub, call] : calls)
      if (sub->parsed()) rc = call(CommandLine{argc, argv});
  } catch (const schedhot::UsageError& e) {  // an option that does not fit, found while running
    rc = usage_error(e.what());
  } catch (const schedhot::LiveError& e) {  // a live session that could not start or go on
    rc = print_live_error(e);
  } catch (const std::exception& e) {
    if (!std::ferror(stdout)) err(e.what());  // stdout failing mid-output (fmt throws) is said below
    rc = -1;
  }
  // Output that could not be written is an error, not a silent exit 0 (a closed pipe,
  // the reader gone, stays quiet as with SIGPIPE). A command that returned non-zero has
  // already said what failed: one line, not two; but diff's 3 is a verdict, not a failure,
  // and a verdict whose report was not written is exit 1 with the reason.
  constexpr int kVerdictStatus = 3;  // diff: a significant change (README "diff")
  if (!stdout_ok()) {
    const bool said = rc > 0 && rc != kVerdictStatus;
    if (g_stdout_errno != EPIPE && !said) err(fmt::format("cannot write to stdout: {}", std::strerror(g_stdout_errno)));
    return said ? rc : 1;
  }
  if (rc < 0) rc = 1;
  return rc;
}
