// `schedhot report --fleet`'s entry point.
#pragma once
#include "analysis/fleet.h"
#include "command/command.h"

namespace schedhot {

/// The whole command: exit status 0 when the report was built (hosts that failed are
/// rows of it), 1 when DIR cannot be read or holds no host, 130 interrupted.
CommandOutput fleet_command(const FleetRequest& req, const std::string& format = "text");

}  // namespace schedhot
