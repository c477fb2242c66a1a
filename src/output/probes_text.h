// The probes document (analysis/probes.h) as text for a terminal.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace schedhot {

/// The text: "kernel R  BTF yes  kprobes no  kallsyms ok", the layout's source and notes, the
/// fixes, then per probe "NAME attached BACKEND" or "NAME UNAVAILABLE REASON" with its
/// detail lines, and "N of M probes attached". Ends with a newline. The document's layout
/// and probes are read back as CoherenceLayout and ProbeStatus (std::runtime_error /
/// nlohmann::json::exception on a malformed one).
std::string render_probes_text(const nlohmann::json& probes);

}  // namespace schedhot
