// `schedhot info`'s document: a recording's metadata, probes and integrity
// (output/info_text.h renders it; command/info.h is the command's entry point).
#pragma once
#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

namespace schedhot {

class RecordingReader;

/// The `schedhot info` document (schema "schedhot.info/1", README): metadata, probes and
/// integrity (frames, samples, time span, bytes per sample, index, clean end or damaged
/// tail). Reads every remaining frame of r to check it; throws std::runtime_error
/// ("interrupted") when *stop becomes true on the way.
nlohmann::json recording_info(RecordingReader& r, const std::string& file, const std::atomic<bool>* stop = nullptr);

}  // namespace schedhot
