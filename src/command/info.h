// `schedhot info`'s entry point: a recording checked frame by frame, its document
// (analysis/info.h) rendered.
#pragma once
#include <atomic>
#include <string>

#include "command/command.h"

namespace schedhot {


/// One `schedhot info`, parsed.
struct InfoRequest {
  std::string file;                         ///< the recording (not empty: the CLI checks)
  std::string format = "text";              ///< an output format of the info document (output/format.h)
  const std::atomic<bool>* stop = nullptr;  ///< Ctrl-C: checking the frames ends (status 130)
};

/// `schedhot info`: opens req.file, checks every frame and renders the info document
/// in req.format (output/format.h). Errors are values: a file that cannot be opened or is not a
/// recording, or a read error, is status 1 with its one-line message; interrupted is 130
/// ("interrupted"). A damaged tail is not an error: the document names it.
CommandOutput info_command(const InfoRequest& req);

}  // namespace schedhot
