// The closing INDEX and END frames' payloads (1.1, layouts in recording.h), encoder next to
// decoder. The reader's use of them (trailer, sample positions, seeks) is in index.cpp too.
// Internal to src/store.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "store/recording.h"

namespace schedhot {

/// The INDEX payload: the count, then every entry (kIndexEntryBytes each).
std::string encode_index(const std::vector<IndexEntry>& entries);

/// The END payload (kEndPayloadBytes): samples, flags 0, the INDEX frame's offset, the
/// first and last sample's CLOCK_MONOTONIC ns.
std::string encode_end(uint32_t samples, uint64_t index_offset, uint64_t first_mono_ns, uint64_t last_mono_ns);

/// An END payload of kEndPayloadBytes (the caller checks the size) into info's samples,
/// index_offset, first_mono_ns and last_mono_ns.
void decode_end(const std::string& payload, IndexInfo& info);

/// An INDEX payload, checked against info (from END; its entries set here) and the first
/// frame after META at data_start: the count matches the payload and the samples, entries
/// start at ordinal 0 and grow in ordinal, offset and time, within data_start..INDEX.
/// false with why (index_problem's text) when not.
bool decode_index(const std::string& payload, uint64_t data_start, IndexInfo& info, std::vector<IndexEntry>& entries,
                  std::string& why);

}  // namespace schedhot
