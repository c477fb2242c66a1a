#include "command/fleet.h"

#include "output/fleet_text.h"
#include "sys/json_text.h"

namespace schedhot {

CommandOutput fleet_command(const FleetRequest& req) {
  return document_output([&] { return fleet_document(req); }, [&](const nlohmann::json& d) {
    switch (req.format) {
      case FleetFormat::json: return json_text(d, 2) + "\n";
      case FleetFormat::csv: return render_fleet_csv(d);
      case FleetFormat::text: break;
    }
    return render_fleet_text(d);
  });
}

}  // namespace schedhot
