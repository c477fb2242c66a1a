// SlotWords: one probe's per-CPU slot words (ncpus * slot_words u64 words, CPU-major) in
// copy-on-write blocks of kBlockCpus CPUs, so that a copy of a sample shares every block
// and a new sample costs only the blocks that changed (issue 32: cost proportional to what
// changed, not to the CPU count).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace schedhot {

/// What one state of a probe's slot words changed to the next, as the code that made the
/// next state applied it (the recording decoder): per CPU, the words that changed and how
/// much each grew (a word that shrank, a reset, grew by 0, as Interval counts it).
/// Interval reads this instead of comparing every CPU's words when its two samples are
/// consecutive states (SlotWords::delta_from): a busy 8192-CPU interval's whole-machine
/// histogram is then the words that moved, not 8192 x 512 buckets (issue 32).
struct SlotDelta {
  uint64_t before = 0;  ///< the stamp of the state it applies to (SlotWords::stamp())
  uint64_t after = 0;   ///< the stamp of the state it made
  /// ncpus + 1 offsets: CPU c's entries are [first[c], first[c + 1]).
  std::vector<uint32_t> first;
  std::vector<uint32_t> word;   ///< slot word index, ascending within a CPU
  std::vector<uint64_t> grown;  ///< how much that word grew (0: it shrank)
  /// The entries whose word shrank, ascending: (entry index, new - old mod 2^64), so that
  /// an encoder has every entry's change without reading the words.
  std::vector<std::pair<uint32_t, uint64_t>> shrunk;
  /// Entry i's change, new - old mod 2^64 (grown, or the shrunk list's for a word that
  /// shrank): the word before it is the word after minus this.
  uint64_t change(uint32_t i) const {
    if (grown[i]) return grown[i];
    const auto it = std::lower_bound(shrunk.begin(), shrunk.end(), std::pair<uint32_t, uint64_t>(i, 0));
    return it != shrunk.end() && it->first == i ? it->second : 0;
  }
  /// Adds an entry for word w, from old to now (requires old != now).
  void add(uint32_t w, uint64_t old, uint64_t now) {
    if (now < old) shrunk.emplace_back(uint32_t(word.size()), now - old);
    word.push_back(w);
    grown.push_back(now > old ? now - old : 0);
  }
};

/// ncpus * slot_words u64 words, CPU-major, held as blocks of kBlockCpus CPUs (the last
/// block may hold fewer). Each block is immutable while shared: copying a SlotWords copies
/// block pointers (no words), and a write (mut_cpu(), mut(), mut_block()) first unshares
/// the one block it touches (a copy of kBlockCpus * slot_words words, or none when this
/// object is the block's only holder). Every all-zero block made by assign() is one
/// process-wide zero block per block size (never written: writing unshares it).
///
/// Reads: by CPU (cpu(c): slot_words words) or by flat index (operator[](i), i = c *
/// slot_words + w). Two SlotWords that hold the same block for CPU c have equal words on
/// it (cpu(c) == other.cpu(c) as pointers): Interval and the recording writer skip such
/// CPUs without reading them.
///
/// Not thread-safe for concurrent use of one object; copies may be read and written from
/// different threads (the blocks' reference counts are atomic, a shared block is never
/// written).
class SlotWords {
 public:
  /// log2 of the CPUs per block. 16 CPUs, measured at 8192 CPUs (sampler-like compare and
  /// copy, interval sums, reader-like unsharing, 2026-12-06): with every CPU busy 4, 8, 16
  /// and 64 cost about the same; with 1 CPU in 64 busy (every 64th) 64-CPU blocks rewrite
  /// every block, 16-CPU blocks a quarter (decode 14 ms against 113 ms with 64), 8 an
  /// eighth (9 ms) for a few percent more on a busy machine (more blocks, more pointers).
  /// Freed blocks are kept for reuse (up to 256 MB), so a busy interval's new blocks are
  /// not fresh pages.
#ifdef SCHEDHOT_SLOT_BLOCK_SHIFT  // a benchmark's override (one translation unit's build of it)
  static constexpr uint32_t kBlockShift = SCHEDHOT_SLOT_BLOCK_SHIFT;
#else
  static constexpr uint32_t kBlockShift = 4;
#endif
  static constexpr uint32_t kBlockCpus = 1u << kBlockShift;

  SlotWords() = default;
  /// All zeros, ncpus * slot_words words (see assign()).
  SlotWords(uint32_t ncpus, uint32_t slot_words) { assign(ncpus, slot_words); }

  /// Makes this ncpus * slot_words words, all zero: every block is the shared zero block,
  /// so this allocates only the block table (and the zero block, once per block size per
  /// process). ncpus or slot_words 0: empty.
  void assign(uint32_t ncpus, uint32_t slot_words);
  /// Empty: no CPU, no word, no block.
  void clear();
  /// Lets go of the words but keeps the shape and the stamp: a hollow state names the state
  /// it was (Interval reads its words from a later state and the delta from it, SlotDelta),
  /// and its blocks, held by no one else, can be written in place by their producer (the
  /// recording decoder: one state for a walk instead of two, issue 32). Reading words of a
  /// hollow state (cpu(), operator[], block()) is not allowed.
  void hollow();
  /// Shaped (ncpus() > 0) but holding no words (hollow()).
  bool is_hollow() const { return ncpus_ && blocks_.empty(); }
  /// Whether this hollow state's words can be read back from later (refill()): later
  /// holds words of the same shape and is this very state (the same stamp) or was made
  /// from it by its kept delta.
  bool refillable_from(const SlotWords& later) const;
  /// Gives this hollow state its words back from later (refillable_from() required, else
  /// false and nothing changes): a copy of later's (blocks shared) with later's kept delta
  /// undone (the blocks it touches copied: later is not written).
  bool refill(const SlotWords& later);

  uint32_t ncpus() const { return ncpus_; }
  uint32_t slot_words() const { return sw_; }
  /// ncpus() * slot_words(): the number of words.
  size_t size() const { return size_t(ncpus_) * sw_; }
  bool empty() const { return size() == 0; }
  /// Whether the shape is ncpus x slot_words.
  bool shaped(uint32_t ncpus, uint32_t slot_words) const { return ncpus_ == ncpus && sw_ == slot_words; }

  /// CPU c's slot_words words (read only; valid until this object's block for c is
  /// unshared or released). Requires c < ncpus().
  const uint64_t* cpu(uint32_t c) const { return blocks_[c >> kBlockShift].get() + size_t(c & (kBlockCpus - 1)) * sw_; }
  /// Word i, i = cpu * slot_words + word. Requires i < size().
  uint64_t operator[](size_t i) const {
    const uint32_t c = static_cast<uint32_t>(i / sw_);
    return cpu(c)[i - size_t(c) * sw_];
  }
  /// CPU c's words, writable: unshares c's block first (copies it when shared). Requires
  /// c < ncpus(). The pointer is valid until this object is copied or assigned: a write
  /// through it after a copy would change the copy too.
  uint64_t* mut_cpu(uint32_t c) { return mut_block(c >> kBlockShift) + size_t(c & (kBlockCpus - 1)) * sw_; }
  /// Word i, writable (mut_cpu()'s unsharing and validity). Requires i < size().
  uint64_t& mut(size_t i) {
    const uint32_t c = static_cast<uint32_t>(i / sw_);
    return mut_cpu(c)[i - size_t(c) * sw_];
  }

  /// Blocks: block b holds CPUs [b * kBlockCpus, b * kBlockCpus + block_cpus(b)).
  size_t nblocks() const { return blocks_.size(); }
  uint32_t block_cpus(size_t b) const {
    const uint32_t first = static_cast<uint32_t>(b) << kBlockShift;
    return ncpus_ - first < kBlockCpus ? ncpus_ - first : kBlockCpus;
  }
  /// Block b's block_cpus(b) * slot_words words, read only.
  const uint64_t* block(size_t b) const { return blocks_[b].get(); }
  /// Block b, writable: when shared, replaced by a new block of this object's own, holding
  /// a copy of the old words when keep (else undefined words: the caller overwrites all
  /// of them). Requires b < nblocks().
  uint64_t* mut_block(size_t b, bool keep = true);
  /// Whether this and o hold the very same block b (then its words are equal).
  bool same_block(const SlotWords& o, size_t b) const {
    return b < blocks_.size() && b < o.blocks_.size() && blocks_[b] == o.blocks_[b];
  }
  /// Whether block b is the shared zero block (all zero, never written).
  bool zero_block(size_t b) const { return b < blocks_.size() && blocks_[b].get() == zero_; }

  /// The state's stamp: a process-unique number its producer gave it (stamp_state()), kept
  /// by copies, 0 once any word may have been written since (every mut_*(), assign(),
  /// clear()). Two SlotWords with the same non-zero stamp hold the same words.
  uint64_t stamp() const { return stamp_; }
  /// Gives this state a fresh stamp; with d (d->before the stamp of the state it was made
  /// from), keeps d as what changed to make it (d->after is set to the new stamp).
  void stamp_state(std::shared_ptr<SlotDelta> d = nullptr);
  /// What changed from a to this state, when this state was made from exactly a's by the
  /// kept delta (stamps match, neither written since); else null.
  const SlotDelta* delta_from(const SlotWords& a) const {
    return delta_ && stamp_ && a.stamp_ && delta_->after == stamp_ && delta_->before == a.stamp_ ? delta_.get()
                                                                                                 : nullptr;
  }

  /// Undoes d, the changes applied to make this state (d.first complete: ncpus + 1
  /// offsets; its entries written since d.before's state, as the decoder keeps them): each
  /// word back to its value before (now minus its change, mod 2^64), written in place
  /// where the block is ours alone, and the stamp back to d.before (0 stays 0). For a
  /// producer whose consumer let go of that state's words (SlotWords::hollow) and asks for
  /// them back after a failed step (RecordingReader::restore).
  void undo(const SlotDelta& d);

  /// The kept delta and the stamp it was made from (tests: a state made in place, when no
  /// other object holds the state before it), whatever state is at hand; null: none.
  const SlotDelta* kept_delta() const { return stamp_ && delta_ && delta_->after == stamp_ ? delta_.get() : nullptr; }
  /// kept_delta(), held (it outlives an undo() that lets go of it).
  std::shared_ptr<const SlotDelta> kept_delta_ptr() const { return kept_delta() ? delta_ : nullptr; }

  /// For a producer that makes each state from the one before by applying its changes (the
  /// recording decoder), around each application: begin_next() before the first write,
  /// end_next() after stamp_state(). A block the write unshares is then, when possible, the
  /// block of the state before the current one, no longer held by anyone else (a consumer
  /// that lets go of the sample before the one it holds: IntervalCursor), caught up by
  /// copying the words the kept delta says changed, instead of a copy of the whole block:
  /// on a busy machine a new sample then costs what changed, not 225 MB of copying at 8192
  /// CPUs. Without it (or when the block is still held) a write copies as before.
  void begin_next();
  void end_next();
  /// Bytes of words a write caught up from an older block instead of copying (a counter
  /// for the tests and benchmarks).
  static uint64_t recycled_bytes() { return recycled_.load(std::memory_order_relaxed); }

  /// Same shape and words (shared blocks are not read).
  bool operator==(const SlotWords& o) const;

  /// Bytes of words allocated for blocks by every SlotWords of the process so far (a
  /// counter for the tests and benchmarks: what an interval cost), and bytes copied from
  /// a shared block when unsharing one.
  static uint64_t allocated_bytes() { return allocated_.load(std::memory_order_relaxed); }
  static uint64_t copied_bytes() { return copied_.load(std::memory_order_relaxed); }

 private:
  uint32_t ncpus_ = 0;
  uint32_t sw_ = 0;
  const uint64_t* zero_ = nullptr;  ///< the zero block of this shape's block size
  std::vector<std::shared_ptr<uint64_t[]>> blocks_;
  uint64_t stamp_ = 0;
  std::shared_ptr<const SlotDelta> delta_;
  /// begin_next()'s blocks: not copied with the words (a copy starts without them), so a
  /// consumer's copy never holds a block the producer could reuse.
  struct Older {
    std::vector<std::shared_ptr<uint64_t[]>> base;     ///< the current state's blocks, at begin_next()
    uint64_t base_stamp = 0;                          ///< and its stamp
    std::vector<std::shared_ptr<uint64_t[]>> recycle;  ///< the state before it, during one application
    std::shared_ptr<const SlotDelta> recycle_delta;    ///< recycle's state to the current one
    Older() = default;
    Older(const Older&) {}
    Older& operator=(const Older&) { return *this; }
    Older(Older&&) = default;
    Older& operator=(Older&&) = default;
  } older_;
  static std::atomic<uint64_t> recycled_;
  static std::atomic<uint64_t> allocated_, copied_;
};

}  // namespace schedhot
