// `schedhot report`'s entry point: a window of a SampleSource (a recording or a live
// session) through the report document (analysis/report.h), rendered.
#pragma once
#include <atomic>
#include <string>

#include "analysis/report.h"
#include "command/command.h"
#include "live/session.h"

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

/// `schedhot report FILE`: req.file opened (status 1 with the reader's one line when it
/// cannot be), then report_command() over it.
CommandOutput report_file_command(const ReportRequest& req);

/// `schedhot report --live`: a LiveSession of live (live/session.h; throws LiveError when no
/// probe attaches) sampled for its duration or until its stop, then report_command() over it.
CommandOutput report_live_command(LiveOptions live, const ReportRequest& req);

}  // namespace schedhot
