// The commands' shared runtime (cli/commands.h): the stop flag and its signal handlers, the
// error printers, the --format choice.
#include "cli/commands.h"

#include <signal.h>

#include <utility>

#include <fmt/format.h>

#include "command/command.h"

namespace schedhot::cli {

std::atomic<bool> g_stop{false};

namespace {

void on_signal(int) { g_stop.store(true); }

/// The command main is running ("serve"), for usage_error()'s pointer.
std::string g_usage_command;

}  // namespace

void set_usage_command(const std::string& name) { g_usage_command = name; }

std::string usage_hint() {
  return g_usage_command.empty() ? "(see schedhot --help)" : fmt::format("(see schedhot {} --help)", g_usage_command);
}

int usage_error(const std::string& msg) {
  err(fmt::format("{} {}", msg, usage_hint()));
  return 2;
}

void err(const std::string& msg) { say(msg); }

std::string FormatOptions::chosen() const {
  std::string name = format, by = "--format " + format;  // the format so far, and the option that named it
  for (const auto& [given, flag] : {std::pair{json, "json"}, std::pair{csv, "csv"}}) {
    if (!given) continue;
    if (!name.empty() && name != flag) throw UsageError(fmt::format("{} and --{}: pick one", by, flag));
    name = flag;
    by = fmt::format("--{}", flag);
  }
  return name.empty() ? "text" : name;
}

int print_output(const CommandOutput& res) {
  fmt::print("{}", res.out);
  for (size_t i = 0; i < res.errors.size(); ++i)  // status 2: an option that does not fit; its line points to --help
    err(res.status == 2 && i + 1 == res.errors.size() ? fmt::format("{} {}", res.errors[i], usage_hint()) : res.errors[i]);
  return res.status;
}

int print_live_error(const LiveError& e) {
  if (e.status() == 2) return usage_error(e.what());
  err(e.what());
  return e.status();
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: sleeps and reads return early
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

}  // namespace schedhot::cli
