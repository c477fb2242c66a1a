// What `schedhot probes` prints: the kernel's facts, the hot lines' layout and the fixes it
// shows, and each probe's attach outcome (the backend and symbol used, or why not; the
// sites, copies and alternatives tried), as text or as JSON (schema schedhot.probes/1).
#pragma once
#include <string>

#include "live/session.h"

namespace schedhot {

/// The text: "kernel R  BTF yes  kprobes no  kallsyms ok", the layout's source and notes, the
/// fixes, then per probe "NAME attached BACKEND" or "NAME UNAVAILABLE REASON" with its
/// detail lines, and "N of M probes attached". Ends with a newline.
std::string probes_text(const Attached& a);
/// The JSON document (schedhot.probes/1: kernel, btf, kprobes, kallsyms, layout, fixes,
/// probes), indented by 2, with a final newline.
std::string probes_json_text(const Attached& a);

}  // namespace schedhot
