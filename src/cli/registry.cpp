#include "cli/registry.h"

#include <algorithm>
#include <cstring>

namespace schedhot::cli {

namespace {

std::vector<CommandSpec>& registry() {
  static std::vector<CommandSpec> r;  // built on first use: the registrations run before main()
  return r;
}

}  // namespace

std::string CommandLine::text() const {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

RegisterCommand::RegisterCommand(CommandSpec spec) { registry().push_back(std::move(spec)); }

std::vector<CommandSpec> registered_commands() {
  std::vector<CommandSpec> r = registry();
  std::sort(r.begin(), r.end(), [](const CommandSpec& a, const CommandSpec& b) {
    return a.order != b.order ? a.order < b.order : std::strcmp(a.name, b.name) < 0;
  });
  return r;
}

}  // namespace schedhot::cli
