// `schedhot report`'s entry point: a window of a SampleSource (a recording or a live
// session) through the report document (analysis/report.h), rendered.
#pragma once
#include <atomic>
#include <string>

#include "analysis/report.h"
#include "command/command.h"

namespace schedhot {

/// One `schedhot report`, parsed.
struct ReportRequest {
  ReportOptions opts;
  std::string file;            ///< "" for live
  std::string from, to;        ///< --from/--to as given (for messages)
  std::string format = "text";  ///< an output format of the report (output/format.h)
  const std::atomic<bool>* stop = nullptr;  ///< Ctrl-C: a file's report ends (status 130)
};

/// `schedhot report` over src: reads it through a WindowedCursor (store/window.h; reader
/// is src when it is a recording, else nullptr), builds the report and renders it in
/// req.format (output/format.h). Errors (fewer than two samples, nothing after --from, interrupted) are
/// values in the result; a damaged file's report comes with one message about it.
CommandOutput report_command(SampleSource& src, RecordingReader* reader, const ReportRequest& req);

}  // namespace schedhot
