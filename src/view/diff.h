// schedhot diff: two recordings (or two windows of one) compared the way kernel patches
// are argued: per probe calls, rate and p10 p50 p90 p98 p99 max for A and B, the ratio
// B/A and whether it is larger than the noise (model/compare.h: bootstrap over
// intervals); per modeled cacheline transfers/s A vs B (model/lines.h), optionally per
// CPU or topology group; host differences that make the comparison suspect first.
// The JSON document (schema "schedhot.diff/1", README "diff") is built first; text,
// markdown and the commit-message table render it.
#pragma once
#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "model/compare.h"
#include "view/report.h"

namespace schedhot {

/// One side: a recording and a window of it (seconds since its first sample, < 0 open).
struct DiffSide {
  std::string file;
  double from_s = -1, to_s = -1;
  std::string window;  ///< the window as given ("0:60s"), "" for the whole file
};

enum class DiffFormat { text, json, markdown, patch };
/// "text" | "json" | "markdown" | "patch"; std::invalid_argument otherwise (one line).
DiffFormat parse_diff_format(const std::string& s);

/// How transfers/s of a line are broken down: not at all, or per CPU / core / LLC / node.
enum class DiffBy { none, cpu, core, llc, node };
/// "cpu" | "core" | "llc" | "node"; std::invalid_argument otherwise.
DiffBy parse_diff_by(const std::string& s);

/// One `schedhot diff`, parsed.
struct DiffRequest {
  DiffSide a, b;
  DiffFormat format = DiffFormat::text;
  DiffBy by = DiffBy::none;
  int resamples = 1000;  ///< bootstrap resamples per figure (model/compare.h kResamples)
  const std::atomic<bool>* stop = nullptr;
};

/// `schedhot diff`: reads both sides through WindowedCursor (store/window.h), builds
/// the diff document and renders it. Status 0: nothing significant; 3: some probe figure
/// or line changed significantly; 1: a file cannot be read, is damaged where its window
/// reaches (one line: which file, where, the intact span; a window wholly before the
/// damage is compared, and its side says so) or its window has fewer than two samples;
/// 130 interrupted. Host differences go in the output ("host" warnings), not in errors.
CommandOutput diff_command(const DiffRequest& req);

/// The diff document of req (what diff_command renders); throws std::runtime_error with
/// one line (the file and what is wrong) when a side cannot be read.
nlohmann::json diff_document(const DiffRequest& req);

/// Renderings of a diff document.
std::string render_diff_text(const nlohmann::json& d);
std::string render_diff_markdown(const nlohmann::json& d);
/// The seeds' commit-message layout: per probe with a latency histogram, one row per side
/// "  A:  p10:  700  p50: 1915  p90: 6619  p98: 11150  p99: 13200" (ns), then the rate line
/// "  rate: 3353.94/s -> 3469.31/s (+3.4 %)".
std::string render_diff_patch(const nlohmann::json& d);

}  // namespace schedhot
