#include "probe/slot_words.h"

#include <cstring>
#include <mutex>
#include <utility>

namespace schedhot {

std::atomic<uint64_t> SlotWords::allocated_{0};
std::atomic<uint64_t> SlotWords::copied_{0};
std::atomic<uint64_t> SlotWords::recycled_{0};

namespace {

/// The process-wide all-zero block of n words (one per size, kept for the process: a few
/// sizes, one per probe's slot width).
std::shared_ptr<uint64_t[]> zero_block_of(size_t n) {
  static std::mutex mu;
  static std::vector<std::pair<size_t, std::shared_ptr<uint64_t[]>>> blocks;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [size, block] : blocks)
    if (size == n) return block;
  blocks.emplace_back(n, std::make_shared<uint64_t[]>(n));  // value-initialized: zeros
  return blocks.back().second;
}

/// Freed blocks kept for reuse, by size: a busy machine's sampler, writer and reader
/// replace most blocks every interval, and blocks handed back to malloc would come back
/// as fresh pages (page faults: at 8192 CPUs about 225 MB of them an interval) once glibc
/// trims or unmaps them. At most kPoolBytes are kept; past it a freed block is deleted.
class BlockPool {
 public:
  static constexpr size_t kPoolBytes = size_t(256) << 20;
  uint64_t* take(size_t n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [size, free] : free_)
        if (size == n && !free.empty()) {
          uint64_t* p = free.back();
          free.pop_back();
          bytes_ -= n * sizeof(uint64_t);
          return p;
        }
    }
    return new uint64_t[n];
  }
  void give(uint64_t* p, size_t n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes_ + n * sizeof(uint64_t) <= kPoolBytes) {
        bytes_ += n * sizeof(uint64_t);
        for (auto& [size, free] : free_)
          if (size == n) {
            free.push_back(p);
            return;
          }
        free_.emplace_back(n, std::vector<uint64_t*>{p});
        return;
      }
    }
    delete[] p;
  }

 private:
  std::mutex mu_;
  size_t bytes_ = 0;
  std::vector<std::pair<size_t, std::vector<uint64_t*>>> free_;
};

BlockPool& pool() {
  static BlockPool* p = new BlockPool;  // never destroyed: blocks may be freed at exit
  return *p;
}

}  // namespace

void SlotWords::assign(uint32_t ncpus, uint32_t slot_words) {
  if (!ncpus || !slot_words) {
    clear();
    return;
  }
  std::shared_ptr<uint64_t[]> zero = zero_block_of(size_t(kBlockCpus) * slot_words);
  ncpus_ = ncpus;
  sw_ = slot_words;
  zero_ = zero.get();
  blocks_.assign((size_t(ncpus) + kBlockCpus - 1) >> kBlockShift, zero);
  stamp_ = 0;
  delta_.reset();
  older_ = Older{};
}

void SlotWords::clear() {
  ncpus_ = sw_ = 0;
  zero_ = nullptr;
  blocks_.clear();
  stamp_ = 0;
  delta_.reset();
  older_ = Older{};
}

void SlotWords::hollow() {
  blocks_.clear();
  blocks_.shrink_to_fit();
  delta_.reset();
  older_ = Older{};
}

bool SlotWords::refillable_from(const SlotWords& later) const {
  if (!is_hollow() || !stamp_ || !later.shaped(ncpus_, sw_) || later.is_hollow()) return false;
  if (later.stamp_ == stamp_) return true;
  const SlotDelta* d = later.kept_delta();
  return d && d->before == stamp_ && d->first.size() == size_t(ncpus_) + 1;
}

bool SlotWords::refill(const SlotWords& later) {
  if (!refillable_from(later)) return false;
  if (later.stamp_ == stamp_) {
    *this = later;
    return true;
  }
  const std::shared_ptr<const SlotDelta> d = later.delta_;
  *this = later;
  undo(*d);
  return true;
}

void SlotWords::undo(const SlotDelta& d) {
  if (d.first.size() != size_t(ncpus_) + 1 || is_hollow()) return;
  for (uint32_t c = 0; c < ncpus_; ++c) {
    const uint32_t i0 = d.first[c], i1 = d.first[size_t(c) + 1];
    if (i0 >= i1) continue;
    uint64_t* slot = mut_cpu(c);
    for (uint32_t i = i0; i < i1 && i < d.word.size(); ++i)
      if (d.word[i] < sw_) slot[d.word[i]] -= d.change(i);
  }
  stamp_ = d.before;
  delta_.reset();
}

void SlotWords::stamp_state(std::shared_ptr<SlotDelta> d) {
  static std::atomic<uint64_t> next{1};
  stamp_ = next.fetch_add(1, std::memory_order_relaxed);
  if (d) d->after = stamp_;
  delta_ = std::move(d);
}

uint64_t* SlotWords::mut_block(size_t b, bool keep) {
  stamp_ = 0;  // a word may be written through the pointer returned
  std::shared_ptr<uint64_t[]>& p = blocks_[b];
  if (p.get() != zero_ && p.use_count() == 1) {
    // Ours alone: whoever held it before has let go (pairs with the release of their
    // reference count's decrement), so writing in place is safe.
    std::atomic_thread_fence(std::memory_order_acquire);
    return p.get();
  }
  const size_t n = size_t(block_cpus(b)) * sw_;
  if (keep && b < older_.recycle.size() && older_.recycle[b] && older_.recycle[b].use_count() == 1 &&
      older_.recycle[b] != p) {
    // The block of the state before this one, held by no one else: its words plus the
    // changes from it to this state (the kept delta) are this block's words.
    std::shared_ptr<uint64_t[]> r = std::move(older_.recycle[b]);
    std::atomic_thread_fence(std::memory_order_acquire);
    const SlotDelta& d = *older_.recycle_delta;
    const uint32_t c0 = static_cast<uint32_t>(b) << kBlockShift;
    uint64_t* dst = r.get();
    const uint64_t* src = p.get();
    for (uint32_t k = 0; k < block_cpus(b); ++k)
      for (uint32_t i = d.first[c0 + k], e = d.first[c0 + k + 1]; i < e; ++i) {
        const size_t at = size_t(k) * sw_ + d.word[i];
        dst[at] = src[at];
      }
    recycled_.fetch_add(n * sizeof(uint64_t), std::memory_order_relaxed);
    p = std::move(r);
    return p.get();
  }
  std::shared_ptr<uint64_t[]> fresh(pool().take(n), [n](uint64_t* q) { pool().give(q, n); });
  allocated_.fetch_add(n * sizeof(uint64_t), std::memory_order_relaxed);
  if (keep) {
    if (p.get() == zero_) {
      std::memset(fresh.get(), 0, n * sizeof(uint64_t));
    } else {
      std::memcpy(fresh.get(), p.get(), n * sizeof(uint64_t));
      copied_.fetch_add(n * sizeof(uint64_t), std::memory_order_relaxed);
    }
  }
  p = std::move(fresh);
  return p.get();
}

void SlotWords::begin_next() {
  older_.recycle.clear();
  older_.recycle_delta.reset();
  // The blocks kept at the last begin_next() are the state the kept delta was made from:
  // with it they can be caught up to the current state.
  if (delta_ && stamp_ && older_.base_stamp && delta_->before == older_.base_stamp && delta_->after == stamp_ &&
      older_.base.size() == blocks_.size() && delta_->first.size() == size_t(ncpus_) + 1) {
    older_.recycle = std::move(older_.base);
    older_.recycle_delta = delta_;
  }
  // Blocks no one else holds are written in place (a consumer that keeps only a hollow
  // state of the one before: IntervalCursorOptions::one_state): not kept, so that they stay
  // ours alone.
  older_.base.resize(blocks_.size());
  for (size_t b = 0; b < blocks_.size(); ++b)
    older_.base[b] = blocks_[b].use_count() > 1 ? blocks_[b] : nullptr;
  older_.base_stamp = stamp_;
}

void SlotWords::end_next() {
  older_.recycle.clear();  // what was not reused goes back to the pool
  older_.recycle_delta.reset();
}

bool SlotWords::operator==(const SlotWords& o) const {
  if (ncpus_ != o.ncpus_ || sw_ != o.sw_) return false;
  for (size_t b = 0; b < blocks_.size(); ++b)
    if (blocks_[b] != o.blocks_[b] &&
        std::memcmp(blocks_[b].get(), o.blocks_[b].get(), size_t(block_cpus(b)) * sw_ * sizeof(uint64_t)) != 0)
      return false;
  return true;
}

}  // namespace schedhot
