// schedhot diff: two recordings (or two windows of one) compared the way kernel patches
// are argued: per probe calls, rate and p10 p50 p90 p98 p99 max for A and B, the ratio
// B/A and whether it is larger than the noise (model/compare.h: bootstrap over
// intervals); per modeled cacheline transfers/s A vs B (model/lines.h), optionally per
// CPU or topology group; host differences that make the comparison suspect first.
// The JSON document (schema "schedhot.diff/1", README "diff") is built here; output/diff_text.h
// renders it as text, markdown and the commit-message table; command/diff.h runs the command.
#pragma once
#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "model/compare.h"
#include "analysis/report.h"

namespace schedhot {

/// The percentiles a diff compares, as its document names them.
inline constexpr const char* kPctNames[5] = {"p10", "p50", "p90", "p98", "p99"};

/// One side: a recording and a window of it (seconds since its first sample, < 0 open).
struct DiffSide {
  std::string file;
  double from_s = -1, to_s = -1;
  std::string window;  ///< the window as given ("0:60s"), "" for the whole file
};

/// How transfers/s of a line are broken down: not at all, or per CPU / core / LLC / node.
enum class DiffBy { none, cpu, core, llc, node };
/// "cpu" | "core" | "llc" | "node"; std::invalid_argument otherwise.
DiffBy parse_diff_by(const std::string& s);

/// One `schedhot diff`, parsed.
struct DiffRequest {
  DiffSide a, b;
  DiffBy by = DiffBy::none;
  int resamples = 1000;  ///< bootstrap resamples per figure (model/compare.h kResamples)
  const std::atomic<bool>* stop = nullptr;
};

/// The diff document of req (what diff_command renders); throws std::runtime_error with
/// one line (the file and what is wrong) when a side cannot be read.
nlohmann::json diff_document(const DiffRequest& req);

}  // namespace schedhot
