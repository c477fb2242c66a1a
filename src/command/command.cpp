#include "command/command.h"

#include <stdexcept>
#include <string>

#include "analysis/report.h"

namespace schedhot {

CommandOutput document_output(const std::function<nlohmann::json()>& build,
                              const std::function<std::string(const nlohmann::json&)>& render) {
  CommandOutput res;
  nlohmann::json d;
  try {
    d = build();
  } catch (const Interrupted&) {
    res.errors.push_back("interrupted");
    res.status = 130;
    return res;
  } catch (const std::exception& e) {
    res.errors.push_back(e.what());
    res.status = 1;
    return res;
  }
  res.out = render(d);
  return res;
}

namespace {

std::vector<DocumentCommand>& document_commands() {
  static std::vector<DocumentCommand> r;  // built on first use: the registrations run before main()
  return r;
}

}  // namespace

RegisterDocumentCommand::RegisterDocumentCommand(const DocumentCommand& c) { document_commands().push_back(c); }

const DocumentCommand& document_command(std::string_view name) {
  for (const DocumentCommand& c : document_commands())
    if (name == c.name) return c;
  throw std::logic_error("no document command '" + std::string(name) + "' is linked");
}

}  // namespace schedhot
