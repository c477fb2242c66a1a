// What `schedhot probes` prints, as a document (schema schedhot.probes/1): the kernel's
// facts, the hot lines' layout and the fixes it shows, and each probe's attach outcome
// (the backend and symbol used, or why not; the sites, copies and alternatives tried).
// output/probes_text.h renders it as text.
#pragma once
#include <nlohmann/json.hpp>

#include "live/session.h"

namespace schedhot {

/// The probes document of an attach: {"schema", "kernel", "btf" (vmlinux BTF loaded),
/// "btf_file" (--btf FILE, "" for libbpf's search), "kprobes", "kallsyms" ("ok" or why
/// not), "symbols" (where kernel symbols were read: the --system-map FILE,
/// "/proc/kallsyms", or "none (why)"), "layout" (CoherenceLayout JSON), "fixes"
/// (fixes_json), "probes" (ProbeStatus JSON, catalog order)}.
nlohmann::json probes_document(const Attached& a);

}  // namespace schedhot
