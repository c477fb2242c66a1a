#include "probe/slot_words.h"

#include <cstring>
#include <mutex>
#include <utility>

namespace schedhot {

std::atomic<uint64_t> SlotWords::allocated_{0};
std::atomic<uint64_t> SlotWords::copied_{0};

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
}

void SlotWords::clear() {
  ncpus_ = sw_ = 0;
  zero_ = nullptr;
  blocks_.clear();
  stamp_ = 0;
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

bool SlotWords::operator==(const SlotWords& o) const {
  if (ncpus_ != o.ncpus_ || sw_ != o.sw_) return false;
  for (size_t b = 0; b < blocks_.size(); ++b)
    if (blocks_[b] != o.blocks_[b] &&
        std::memcmp(blocks_[b].get(), o.blocks_[b].get(), size_t(block_cpus(b)) * sw_ * sizeof(uint64_t)) != 0)
      return false;
  return true;
}

}  // namespace schedhot
