// `schedhot probes`: every probe attached for real (live/session.h attach_probes()) and
// the probes document (analysis/probes.h) printed in --format.
#include <memory>

#include <fmt/format.h>

#include "analysis/probes.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "output/format.h"

namespace schedhot::cli {

namespace {

struct ProbesCmd {
  CommonProbeOptions common;
  FormatOptions out;
};

int run_probes(const ProbesCmd& o) {
  const std::string format = o.out.chosen();
  const std::unique_ptr<Attached> a = attach_probes(o.common, err);  // LiveError: main prints it
  fmt::print("{}", render_document(probes_document(*a), format));
  return 0;
}

const RegisterCommand probes{{"probes", "attach every probe for real and say how each attached, or why not", 10,
                              [](CLI::App& c) -> CommandCall {
                                auto o = std::make_shared<ProbesCmd>();
                                add_probe_options(&c, o->common);
                                add_format_options(&c, o->out, schema::probes);
                                return [o](const CommandLine&) { return run_probes(*o); };
                              }}};

}  // namespace

}  // namespace schedhot::cli
