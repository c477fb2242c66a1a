#include "command/fleet.h"

#include "output/format.h"

namespace schedhot {

CommandOutput fleet_command(const FleetRequest& req, const std::string& format) {
  return document_output([&] { return fleet_document(req); }, [&](const nlohmann::json& d) {
    return render_document(d, format);
  });
}

}  // namespace schedhot
