// schedhot diff: two recordings (or two windows of one) compared the way kernel patches
// are argued: per probe calls, rate and p10 p50 p90 p98 p99 max for A and B, the ratio
// B/A and whether it is larger than the noise (model/compare.h: bootstrap over
// intervals); per modeled cacheline transfers/s A vs B (model/lines.h), optionally per
// CPU or topology group; host differences that make the comparison suspect first.
// The JSON document (schema "schedhot.diff/1", README "diff") is built here; output/diff_text.h
// renders it as text, markdown and the commit-message table; command/diff.h runs the command.
#pragma once
#include <atomic>
#include <optional>
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

/// --by: "cpu" | "core" | "llc" | "node" (sys/host.h TopoLevel); std::invalid_argument
/// otherwise.
TopoLevel parse_diff_by(const std::string& s);

/// One `schedhot diff`, parsed.
struct DiffRequest {
  DiffSide a, b;
  std::optional<TopoLevel> by;  ///< how a line's transfers/s are broken down (none: in total only)
  int resamples = 1000;  ///< bootstrap resamples per figure (model/compare.h kResamples)
  const std::atomic<bool>* stop = nullptr;
};

/// The diff document of req (what diff_command renders); throws std::runtime_error with
/// one line (the file and what is wrong) when a side cannot be read.
nlohmann::json diff_document(const DiffRequest& req);

}  // namespace schedhot
