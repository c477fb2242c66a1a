#include "command/command.h"

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

}  // namespace schedhot
