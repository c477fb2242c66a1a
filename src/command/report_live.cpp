// report --live: apart from command/report.cpp because it loads BPF (schedhot_bpf).
#include "command/report.h"

namespace schedhot {

CommandOutput report_live_command(LiveOptions live, const ReportRequest& req) {
  LiveSession sess(std::move(live));
  return report_command(sess, nullptr, req);
}

}  // namespace schedhot
