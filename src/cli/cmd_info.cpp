// `schedhot info`: the option checked, then command/info.h's info_command().
#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/registry.h"
#include "command/info.h"
#include "output/format.h"

namespace schedhot::cli {

namespace {

/// `schedhot info FILE [--json | --format text|json]`: metadata and integrity summary (schema schedhot.info/1).
struct InfoCmd {
  std::string file;
  FormatOptions out;
};

int run_info(const InfoCmd& o) {
  if (o.file.empty()) {
    return usage_error("info needs a recording FILE");
  }
  InfoRequest req;
  req.file = o.file;
  req.format = o.out.chosen();
  req.stop = &g_stop;
  return print_output(info_command(req));
}

const RegisterCommand info_cmd{{"info", "a recording's metadata and integrity: frames, samples, time span, damage", 50,
                                [](CLI::App& c) -> CommandCall {
                                  auto o = std::make_shared<InfoCmd>();
                                  c.add_option("file", o->file, "recording file");
                                  add_format_options(&c, o->out, schema::info);
                                  return [o](const CommandLine&) { return run_info(*o); };
                                }}};

}  // namespace

}  // namespace schedhot::cli
