#include "store/driver.h"

#include <stdexcept>

#include <fmt/format.h>

namespace schedhot {

RecordingDriver::RecordingDriver(LiveCursor& src, RecordingTarget target) : src_(src), target_(std::move(target)) {}

RecordingDriver::~RecordingDriver() = default;

bool RecordingDriver::next(Sample& out) { return !error_ && src_.next(out) && record(out); }

bool RecordingDriver::poll(Sample& out) { return !error_ && src_.poll(out) && record(out); }

bool RecordingDriver::record(Sample& s) {
  if (target_.exact) {
    ExactBatch b = target_.exact->take(s.mono_ns);
    if (exact_started_) s.exact = std::move(b);
    exact_started_ = true;
  }
  if (target_.caught) {
    CatchBatch b = target_.caught->take(s.mono_ns);
    if (caught_started_) s.caught = std::move(b);
    caught_started_ = true;
  }
  const std::vector<int> changed = src_.take_status_changes();
  changed_.insert(changed_.end(), changed.begin(), changed.end());
  if (!recording() || closed_) return true;
  try {
    if (!w_) {
      // The META has the statuses of now: changes before the first sample need no NOTE.
      w_ = std::make_unique<RotatingWriter>(target_.path, src_.meta(), target_.writer, target_.rotate);
    } else {
      for (int i : changed) w_->write_status(src_.meta().probes[size_t(i)].status);
    }
    w_->write_sample(s);
    if (s.caught) {
      caught_events_ += s.caught->events.size();
      caught_lost_ += s.caught->lost;
    }
    if (s.exact) {
      exact_records_ += s.exact->records.size();
      exact_lost_ = s.exact->lost > UINT64_MAX - exact_lost_ ? UINT64_MAX : exact_lost_ + s.exact->lost;
    }
  } catch (const std::exception& e) {
    fail(e);
    return false;
  }
  return true;
}

void RecordingDriver::fail(const std::exception& e) {
  error_ = w_ ? fmt::format("{}; {} samples written before it are readable", e.what(), w_->samples()) : e.what();
  closed_ = true;
  try {
    if (w_) w_->close();  // what was written stays readable with its INDEX and END
  } catch (const std::exception&) {
  }
}

bool RecordingDriver::stop(bool final_sample) {
  if (closed_) return !error_;
  Sample s;
  if (final_sample && src_.finish(s) && !record(s)) return false;
  closed_ = true;
  if (!w_) return true;
  try {
    w_->close();
  } catch (const std::exception& e) {
    error_ = fmt::format("{}; {} samples written before it are readable", e.what(), w_->samples());
    return false;
  }
  return true;
}

std::vector<int> RecordingDriver::take_status_changes() {
  std::vector<int> v;
  v.swap(changed_);
  return v;
}

uint32_t RecordingDriver::samples() const { return w_ ? w_->samples() : 0; }
uint64_t RecordingDriver::bytes() const { return w_ ? w_->bytes() : 0; }
unsigned RecordingDriver::rotations() const { return w_ ? w_->rotations() : 0; }

}  // namespace schedhot

namespace schedhot {

std::string RecordingDriver::summary() const {
  const unsigned r = rotations();
  return fmt::format("wrote {} samples, {} bytes to {}{}{}{}", samples(), bytes(), path(),
                     r ? fmt::format(" ({} rotation{})", r, r == 1 ? "" : "s") : "",
                     target_.exact ? fmt::format("; --exact: {} records, {} lost{}", exact_records_, exact_lost_,
                                                 exact_lost_ ? " (the exact figures are lower bounds)" : "")
                                   : "",
                     target_.caught ? fmt::format("; --catch: {} event{} caught{}", caught_events_, caught_events_ == 1 ? "" : "s",
                                                  caught_lost_ ? fmt::format(", {} lost (buffer full)", caught_lost_) : "")
                                    : "");
}

}  // namespace schedhot
