// The closing INDEX and END frames: their payloads both ways, and the reader's use of them
// and of the frame headers to find samples without decoding them: the trailer
// (load_index), every sample's position (index or scan), seeks by number and by time, and
// the CPUs online in a window.
#include "store/index.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "store/frame.h"
#include "store/sample_codec.h"

namespace schedhot {

// ---- INDEX and END payloads -------------------------------------------------------------

std::string encode_index(const std::vector<IndexEntry>& entries) {
  std::string idx;
  put<uint32_t>(idx, static_cast<uint32_t>(entries.size()));
  for (auto& e : entries) {
    put<uint32_t>(idx, e.ordinal);
    put<uint32_t>(idx, e.seq);
    put<uint64_t>(idx, e.mono_ns);
    put<uint64_t>(idx, e.offset);
  }
  return idx;
}

std::string encode_end(uint32_t samples, uint64_t index_offset, uint64_t first_mono_ns, uint64_t last_mono_ns) {
  std::string end;
  put<uint32_t>(end, samples);
  put<uint32_t>(end, 0);
  put<uint64_t>(end, index_offset);
  put<uint64_t>(end, first_mono_ns);
  put<uint64_t>(end, last_mono_ns);
  return end;
}

void decode_end(const std::string& payload, IndexInfo& info) {
  ByteReader ec(payload);
  info.samples = ec.get<uint32_t>();
  ec.get<uint32_t>();
  info.index_offset = ec.get<uint64_t>();
  info.first_mono_ns = ec.get<uint64_t>();
  info.last_mono_ns = ec.get<uint64_t>();
}

bool decode_index(const std::string& payload, uint64_t data_start, IndexInfo& info, std::vector<IndexEntry>& entries,
                  std::string& why) {
  auto bad = [&](std::string w) {
    why = std::move(w);
    return false;
  };
  const size_t len = payload.size();
  if (len < 4 || (len - 4) % kIndexEntryBytes != 0) return bad(fmt::format("INDEX of {} bytes", len));
  ByteReader c(payload);
  const uint32_t n = c.get<uint32_t>();
  if (n != (len - 4) / kIndexEntryBytes) return bad(fmt::format("INDEX says {} entries in {} bytes", n, len));
  if (info.samples == 0 ? n != 0 : (n == 0 || n > info.samples))
    return bad(fmt::format("INDEX has {} entries for {} samples", n, info.samples));
  if (info.first_mono_ns > info.last_mono_ns) return bad("END's time span runs backwards");
  entries.reserve(n);
  for (uint32_t k = 0; k < n; ++k) {
    IndexEntry ie;
    ie.ordinal = c.get<uint32_t>();
    ie.seq = c.get<uint32_t>();
    ie.mono_ns = c.get<uint64_t>();
    ie.offset = c.get<uint64_t>();
    const IndexEntry* prev = entries.empty() ? nullptr : &entries.back();
    bool ok = ie.ordinal < info.samples && ie.offset >= data_start && ie.offset < info.index_offset &&
              (prev ? ie.ordinal > prev->ordinal && ie.offset > prev->offset && ie.mono_ns >= prev->mono_ns
                    : ie.ordinal == 0);
    if (!ok) return bad(fmt::format("INDEX entry {} is out of order or out of bounds", k));
    entries.push_back(ie);
  }
  info.entries = n;
  return true;
}

// ---- the reader: the trailer, sample positions, seeks --------------------------------

void RecordingReader::load_index() {
  if (file_bytes_ < data_start_ + kEndFrameBytes) return;
  const uint64_t end_at = file_bytes_ - kEndFrameBytes;
  Frame e;
  std::string why;
  if (read_frame_at(end_at, e, why) != ReadStatus::ok || e.type != FrameType::end) return;  // no trailer
  if (e.payload.size() != kEndPayloadBytes) {
    index_problem_ = fmt::format("END frame has {} bytes, not {}", e.payload.size(), kEndPayloadBytes);
    return;
  }
  IndexInfo info;
  decode_end(e.payload, info);
  info.end_offset = end_at;
  auto bad = [&](std::string w) {
    index_problem_ = std::move(w);
    index_entries_.clear();
  };
  if (info.index_offset < data_start_ || info.index_offset >= end_at || end_at - info.index_offset < kFrameHeaderBytes + 4)
    return bad(fmt::format("END names an INDEX at byte {}, outside the frames", info.index_offset));
  Frame x;
  if (read_frame_at(info.index_offset, x, why) != ReadStatus::ok || x.type != FrameType::index ||
      info.index_offset + x.bytes != end_at)
    return bad(fmt::format("no valid INDEX frame at byte {}{}", info.index_offset, why.empty() ? "" : ": " + why));
  if (!decode_index(x.payload, data_start_, info, index_entries_, why)) return bad(std::move(why));
  // Counts and offsets are checked against the frames before a seek or an allocation uses
  // them (a CRC-valid trailer can still lie): each sample takes a frame header at least, and
  // each entry must name a keyframe at its time. A disagreement means scanning instead.
  if (info.samples > (info.index_offset - data_start_) / kFrameHeaderBytes)
    return bad(fmt::format("END says {} samples in {} bytes of frames", info.samples, info.index_offset - data_start_));
  for (size_t k = 0; k < index_entries_.size(); ++k) {
    const IndexEntry& ie = index_entries_[k];
    Frame f;
    if (read_frame_at(ie.offset, f, why, false) != ReadStatus::ok || f.type != FrameType::sample ||
        !(f.flags & kFlagKeyframe) || f.mono_ns != ie.mono_ns)
      return bad(fmt::format("INDEX entry {} names no keyframe at byte {}; scanned the frames instead", k, ie.offset));
  }
  index_ = info;
}

bool RecordingReader::positions_from_index() {
  // Walk the frame headers between the first frame and the INDEX (payloads are not read)
  // and check them against the index; any disagreement means scanning instead.
  std::vector<SamplePos> pos;
  pos.reserve(index_->samples);
  uint64_t at = data_start_;
  size_t k = 0;
  Frame f;
  std::string why;
  while (at < index_->index_offset) {
    if (read_frame_at(at, f, why, false) != ReadStatus::ok) break;
    if (f.type == FrameType::sample) {
      const bool key = f.flags & kFlagKeyframe;
      if (key) {
        if (k >= index_entries_.size() || index_entries_[k].offset != at || index_entries_[k].ordinal != pos.size()) break;
        ++k;
      }
      if (pos.size() >= index_->samples || (!pos.empty() && f.mono_ns <= pos.back().mono_ns)) break;
      pos.push_back({static_cast<uint32_t>(pos.size()), f.mono_ns, at, key});
    }
    at += f.bytes;
  }
  if (at != index_->index_offset || pos.size() != index_->samples || k != index_entries_.size()) {
    index_problem_ = "INDEX does not match the frames; scanned them instead";
    index_.reset();
    index_entries_.clear();
    return false;
  }
  positions_ = std::move(pos);
  return true;
}

void RecordingReader::scan_positions() {
  if (scan_pos_ == 0) scan_pos_ = data_start_;
  Frame f;
  std::string why;
  for (;;) {
    if (damage_ && scan_pos_ >= damage_->offset) {
      scan_done_ = true;
      return;
    }
    ReadStatus st = read_frame_at(scan_pos_, f, why);
    if (st == ReadStatus::ok) {
      if (f.type == FrameType::sample && f.payload.size() >= 4) {
        if (!positions_.empty() && f.mono_ns <= positions_.back().mono_ns) {
          set_damage(scan_pos_, backwards_time(f.mono_ns, positions_.back().mono_ns));
          scan_done_ = true;
          return;
        }
        const bool key = f.flags & kFlagKeyframe;
        // A delta frame before any keyframe cannot be decoded: leave leading ones out.
        if (key || !positions_.empty())
          positions_.push_back({static_cast<uint32_t>(positions_.size()), f.mono_ns, scan_pos_, key});
      }
      if (f.type == FrameType::end) saw_end_ = true;
      std::vector<int> online;
      if (f.type == FrameType::online && minor_ >= 2 && !schedhot::decode_online(f.payload, meta_.ncpus, online, why)) {
        set_damage(scan_pos_, why);  // as next() finds it (replay's positions stop there too)
        scan_done_ = true;
        return;
      }
      // A STEAL frame out of its place (steal_frame_misplaced: from the headers alone), as
      // next() finds it: a window's seek must not jump over it.
      if (f.type == FrameType::sample) scan_catch_ns_.reset();
      if (f.type == FrameType::caught && minor_ >= 5) {
        scan_catch_ns_ = f.mono_ns;
        scan_steal_ = false;
      }
      if (f.type == FrameType::steal && minor_ >= 6) {
        why = steal_frame_misplaced(scan_catch_ns_, scan_steal_, f.mono_ns);
        if (!why.empty()) {
          set_damage(scan_pos_, why);
          scan_done_ = true;
          return;
        }
        scan_steal_ = true;
      }
      ProbeStatus note;
      if (f.type == FrameType::note && !parse_note(f.payload, note, why)) {
        set_damage(scan_pos_, why);  // as next() finds it (a NOTE too deep, not JSON...)
        scan_done_ = true;
        return;
      }
      scan_pos_ += f.bytes;
      continue;
    }
    if (st == ReadStatus::eof) {
      if (!follow_.enabled) scan_done_ = true;
      return;
    }
    if (follow_.enabled && st != ReadStatus::bad) return;  // still being written: look again next time
    set_damage(scan_pos_, why);
    scan_done_ = true;
    return;
  }
}

const std::vector<RecordingReader::SamplePos>& RecordingReader::sample_positions() {
  if (scan_done_) return positions_;
  if (index_ && positions_.empty() && scan_pos_ == 0 && positions_from_index()) {
    scan_done_ = true;
    return positions_;
  }
  scan_positions();
  return positions_;
}

void RecordingReader::check_all_frames() {
  if (scan_done_ && scan_pos_ != 0) return;  // already scanned frame by frame
  positions_.clear();                          // (rebuilt by the scan, as without an index)
  scan_pos_ = 0;
  scan_catch_ns_.reset();
  scan_steal_ = false;
  scan_done_ = false;
  scan_positions();
}

size_t RecordingReader::sample_count() { return index_ ? index_->samples : sample_positions().size(); }

bool RecordingReader::seek_sample(size_t i) {
  size_t k = i;
  if (index_) {
    if (i >= index_->samples) return false;
    auto it = std::upper_bound(index_entries_.begin(), index_entries_.end(), i,
                               [](size_t v, const IndexEntry& e) { return v < e.ordinal; });
    --it;  // entries start at ordinal 0, so one is <= i
    k = it->ordinal;
    pos_ = it->offset;
  } else {
    const auto& pos = sample_positions();
    if (i >= pos.size()) return false;
    while (k > 0 && !pos[k].keyframe) --k;
    pos_ = pos[k].offset;
  }
  have_state_ = false;
  have_online_ = false;
  pending_exact_.reset();
  pending_gaps_.reset();
  pending_caught_.reset();
  after_seek_ = true;  // the sample it lands on gets no CATCH frame
  returned_ns_.reset();  // the sample before the one a seek returns was not returned
  if (minor_ >= 2) {
    // A 1.2 keyframe's online set is the ONLINE frame right before it (fixed size).
    const uint64_t back = kFrameHeaderBytes + online_bitmap_bytes(meta_.ncpus);
    Frame key, on;
    std::string why;
    if (pos_ >= data_start_ + back && read_frame_at(pos_, key, why, false) == ReadStatus::ok &&
        read_frame_at(pos_ - back, on, why, false) == ReadStatus::ok && on.type == FrameType::online &&
        on.bytes == back && on.mono_ns == key.mono_ns)
      pos_ -= back;
  }
  for (size_t n = k; n < i; ++n)
    if (!next_state(false)) return false;
  return true;
}

std::vector<int> RecordingReader::online_cpus(uint64_t from_ns, uint64_t to_ns) {
  std::vector<char> on(meta_.ncpus, 0);
  auto mark = [&](const std::vector<int>& cpus) {
    for (int c : cpus)
      if (c >= 0 && static_cast<uint32_t>(c) < meta_.ncpus) on[size_t(c)] = 1;
  };
  mark(meta_.host.online);
  if (minor_ >= 2) {
    // Walk the frame headers; read only the ONLINE frames' payloads.
    const uint64_t end = index_ ? index_->index_offset : file_bytes_;
    std::vector<int> before;  // the set in effect at from_ns
    uint64_t at = data_start_;
    Frame f;
    std::string why;
    while (at < end && read_frame_at(at, f, why, false) == ReadStatus::ok) {
      if (f.type == FrameType::online && f.mono_ns <= to_ns && read_frame_at(at, f, why) == ReadStatus::ok &&
          decode_online(f.payload, why)) {
        if (f.mono_ns <= from_ns)
          before = online_;
        else
          mark(online_);
      }
      at += f.bytes;
    }
    mark(before);
    have_online_ = false;
  }
  // Every CPU that counted something in the window ran in it.
  Sample a, b;
  bool have_a = seek_time(from_ns) && next(a) && a.mono_ns <= to_ns;
  if (have_a) {
    b = a;
    // The window's last sample: found among the positions (frame headers with an index),
    // decoded from its keyframe.
    const auto& pos = sample_positions();
    auto it = std::upper_bound(pos.begin(), pos.end(), to_ns,
                               [](uint64_t t, const SamplePos& p) { return t < p.mono_ns; });
    Sample s;
    if (it != pos.begin() && seek_sample(static_cast<size_t>(it - pos.begin()) - 1) && next(s) && s.mono_ns > a.mono_ns)
      b = std::move(s);
    mark(a.online);
    mark(b.online);
    for (size_t p = 0; p < a.probes.size() && p < b.probes.size() && p < meta_.probes.size(); ++p) {
      const auto& wa = a.probes[p].words;
      const auto& wb = b.probes[p].words;
      const uint32_t sw = meta_.probes[p].slot.slot_words;
      if (!a.probes[p].present || !b.probes[p].present || !sw || !wa.shaped(meta_.ncpus, sw) || !wb.shaped(meta_.ncpus, sw))
        continue;
      for (uint32_t c = 0; c < meta_.ncpus; ++c) {
        if (on[c]) continue;
        const uint64_t* x = wa.cpu(c);
        const uint64_t* y = wb.cpu(c);
        if (x != y && !std::equal(x, x + sw, y)) on[c] = 1;  // a shared block: equal
      }
    }
  }
  std::vector<int> out;
  for (size_t c = 0; c < on.size(); ++c)
    if (on[c]) out.push_back(static_cast<int>(c));
  return out;
}

bool RecordingReader::seek_time(uint64_t mono_ns) {
  if (index_) {
    if (index_->samples == 0 || mono_ns > index_->last_mono_ns) return false;
    // Start at the last keyframe before t and walk the frame headers to the sample.
    auto it = std::lower_bound(index_entries_.begin(), index_entries_.end(), mono_ns,
                               [](const IndexEntry& e, uint64_t t) { return e.mono_ns < t; });
    if (it != index_entries_.begin()) --it;
    uint64_t at = it->offset;
    size_t ordinal = it->ordinal;
    Frame f;
    std::string why;
    while (at < index_->index_offset && read_frame_at(at, f, why, false) == ReadStatus::ok) {
      if (f.type == FrameType::sample) {
        if (f.mono_ns >= mono_ns) return seek_sample(ordinal);
        ++ordinal;
      }
      at += f.bytes;
    }
    return false;
  }
  const auto& pos = sample_positions();
  auto it = std::lower_bound(pos.begin(), pos.end(), mono_ns,
                             [](const SamplePos& p, uint64_t t) { return p.mono_ns < t; });
  if (it == pos.end()) return false;
  return seek_sample(static_cast<size_t>(it - pos.begin()));
}

}  // namespace schedhot
