// `schedhot diff`'s entry point.
#pragma once
#include "analysis/diff.h"
#include "command/command.h"

namespace schedhot {

/// `schedhot diff`: reads both sides through WindowedCursor (store/window.h), builds
/// the diff document and renders it in format (output/format.h). Status 0: nothing significant; 3: some probe figure
/// or line changed significantly; 1: a file cannot be read, is damaged where its window
/// reaches (one line: which file, where, the intact span; a window wholly before the
/// damage is compared, and its side says so) or its window has fewer than two samples;
/// 130 interrupted. Host differences go in the output ("host" warnings), not in errors.
CommandOutput diff_command(const DiffRequest& req, const std::string& format = "text");

}  // namespace schedhot
