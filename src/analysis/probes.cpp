#include "analysis/probes.h"

#include "analysis/cachelines.h"
#include "probe/layout.h"
#include "probe/status.h"
#include "analysis/schema.h"

namespace schedhot {

nlohmann::json probes_document(const Attached& a) {
  const std::string symbols = a.facts.system_map ? a.facts.system_map_path
                              : a.facts.kallsyms_error.empty() ? std::string("/proc/kallsyms")
                                                                : "none (" + a.facts.kallsyms_error + ")";
  return {{"schema", schema::probes},
          {"kernel", a.host.kernel_release},
          {"btf", a.facts.btf},
          {"btf_file", a.facts.btf_path},
          {"btf_error", a.facts.btf ? std::string() : a.facts.btf_error},
          {"kprobes", a.facts.kprobes},
          {"kallsyms", a.facts.kallsyms_error.empty() ? "ok" : a.facts.kallsyms_error},
          {"symbols", symbols},
          {"layout", a.facts.layout},
          {"fixes", fixes_json(fixes_present(a.facts.layout))},
          {"probes", a.probes->statuses()}};
}

}  // namespace schedhot
