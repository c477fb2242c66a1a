// schedhot recordings: a versioned, append-only file of CRC32C-checked frames.
//
// File = FileHeader, then frames. All integers little-endian.
//
//   FileHeader, 32 bytes
//     0  char[8] magic "SCHEDHOT"
//     8  u16 major (kFormatMajor)      10 u16 minor (kFormatMinor)
//    12  u32 header bytes (32)         16 u64 created, wall clock ns since the epoch
//    24  u32 flags (0)                 28 u32 CRC32C of bytes 0..27
//
//   Frame = FrameHeader (24 bytes) + payload
//     0  u32 magic "SHFR"              4  u32 payload bytes (as stored)
//     8  u8 type                       9  u8 flags (1 = zstd, 2 = keyframe)
//    10  u16 reserved (0)             12  u32 CRC32C of header bytes 4..11 and 16..23 and the payload
//    16  u64 CLOCK_MONOTONIC ns of the sample (0 for other frames)
//
//   Frame types
//     1 META    JSON (schema in README "Recording format"): host, topology, probes with
//               status and slot fields, interval, start times. First frame.
//     2 SAMPLE  binary, zstd-compressed when that is smaller:
//                 u32 seq, u64 mono_ns, u64 wall_ns, u16 probe entries, then per entry
//                 u16 probe index, varint changed CPUs, then per CPU: varint CPU gap,
//                 varint changed words, then per word: varint word gap, zigzag varint delta.
//               A keyframe's deltas are against zero, the others against the previous
//               sample, so idle CPUs cost nothing. A keyframe every kKeyframeEvery samples;
//               the first sample of a file is always one. A probe not listed is absent.
//     3 INDEX   at close, one entry per keyframe:
//                 1.0: u32 n, then n x (u32 seq, u64 mono_ns, u64 frame offset)           20 B each
//                 1.1: u32 n, then n x (u32 ordinal, u32 seq, u64 mono_ns, u64 frame offset) 24 B
//               ordinal = 0-based number of the sample in this file.
//     4 END     at close, the last frame. Its absence means the writer did not finish.
//                 1.0: u32 samples written                                               4 B
//                 1.1: u32 samples, u32 flags (0), u64 INDEX frame offset,
//                      u64 first sample mono_ns, u64 last sample mono_ns                 32 B
//               A 1.1 END frame is always kEndFrameBytes long, so a reader finds it (and
//               the INDEX) by reading the file's last kEndFrameBytes bytes.
//     5 NOTE    JSON {"probe": name, "status": {...}}: a probe's status changed mid-run
//               (e.g. tick_broadcast_lock's address learned).
//     6 ONLINE  (1.2) the online CPUs from the next SAMPLE frame on: a bitmap of
//               ceil(ncpus / 8) bytes, CPU c = bit c % 8 of byte c / 8 (bits >= ncpus zero),
//               stored raw; its mono_ns is that sample's. Written right before a sample
//               whose online set differs from the previous sample's, and before every
//               keyframe (so a seek to a keyframe finds it in the frame just before, which
//               has a fixed size). A sample's online set is the last ONLINE frame's. A
//               sample with none (1.0/1.1 files; a 1.2 writer that did not know) counts
//               as online: META host.online plus every CPU with a non-zero slot word.
//     7 EXACT   (1.3) --exact records of the next SAMPLE frame's interval (after the previous
//               sample, up to its mono_ns, which is this frame's mono_ns), written right before
//               it (before its ONLINE frame, so a seek's ONLINE look-back is unchanged); zstd
//               when that is smaller (flag 1):
//                 u32 n records, u64 records lost in the interval, then per record:
//                 varint ts gap (ns after the previous record; the first: after the
//                 previous sample's mono_ns, or absolute when there is none), varint CPU,
//                 varint probe id, varint slot word (include/schedhot/abi.h sh_exact_rec).
//               A reader gives a SAMPLE the EXACT frame just before it when their mono_ns
//               agree (a seek starts after it: the first sample read after a seek has none,
//               which only covers the time before it).
//     8 GAPS    (1.4) the probes' gap counts of the next SAMPLE frame's interval (sample.h
//               GapBatch: what each CPU added to the gap histograms of each line since
//               the previous sample), written right before it, after its EXACT frame and
//               before its ONLINE frame; its mono_ns is that sample's; zstd when that is
//               smaller (flag 1):
//                 u64 from_ns (the previous sample's mono_ns, <= this frame's mono_ns),
//                 u64 full (line accesses no CPU table had room for), u32 n entries, then
//                 per entry, ascending (cpu, line), no pair twice: varint CPU gap (CPU minus
//                 the previous entry's CPU; the first: the CPU), varint line (an index into
//                 META gap_lines), then per histogram ww, wa, ra: varint non-zero buckets,
//                 then per bucket: varint bucket gap (as SAMPLE's word gap: the first
//                 absolute, then buckets skipped since the previous one), varint value
//                 (1..2^32-1). Buckets < SH_GAP_BUCKETS (include/schedhot/abi.h),
//                 CPU < META ncpus, at most kMaxGapEntriesPerCpu entries of one CPU.
//               A reader gives a SAMPLE the GAPS frame just before it when their mono_ns
//               agree and from_ns is the mono_ns of the sample it returned just before:
//               the first sample read after a seek, and the first of a file, have none
//               (their interval started at a sample the caller was not given).
//     9 CATCH   (1.5) --catch events of the next SAMPLE frame's interval (probe/records.h
//               CatchBatch: every event at least its rule's threshold long, with its kernel
//               stack), written right before it, after its GAPS frame and before its ONLINE
//               frame (so a seek's ONLINE look-back is unchanged); its mono_ns is that
//               sample's; zstd when that is smaller (flag 1). All varints:
//                 lost (records the perf buffers lost in the interval),
//                 n symbols, then per symbol: length (<= kMaxCatchSymbolBytes), its bytes
//                   (printable ASCII; "" = no symbol covered the address),
//                 n stacks, then per stack: frames (<= SH_CATCH_FRAMES, innermost first), then
//                   per frame: symbol (an index into this frame's symbol table), offset into it,
//                 n events, in time order, then per event: ts gap (ns after the previous
//                   event; the first: after the previous sample's mono_ns, or absolute when
//                   there is none), dur ns, CPU (< META ncpus), probe (< META's probe count),
//                   flags (SH_CATCH_F_*, <= 0xffff), pid, tgid (<= 2^32-1), comm length
//                   (<= kMaxCatchCommBytes) and its bytes (printable ASCII), detail, irq ns,
//                   softirq ns, nmi ns, stack (index + 1 into the stacks; 0: none).
//               The flags never hold SH_CATCH_F_STEAL (1.6: the STEAL frame says it; a
//               reader clears the bit in a CATCH frame).
//               Every event's time is in (previous sample's mono_ns, this frame's mono_ns].
//               A reader refuses a frame whose decoded batch would take more than
//               kMaxCatchDecodedBytes (a few bytes naming a long symbol can stand for a
//               stack frame).
//               Symbols are text (kallsyms names resolved when recorded), never addresses:
//               a recording does not carry the traced host's KASLR base.
//               A reader gives a SAMPLE the CATCH frame just before it when their mono_ns
//               agree; the first sample read after a seek has none (as EXACT: its interval
//               started at a sample the caller was not given).
//    10 STEAL   (1.6) the steal times (abi.h sh_catch_rec.steal_ns, SH_CATCH_F_STEAL) of the
//               CATCH frame's events, written right after that CATCH frame (same mono_ns)
//               when at least one of them has a steal time; zstd when that is smaller (flag
//               1). All varints: n (= the CATCH frame's events), then per event in its order:
//               0 (not kept: no paravirt steal clock, or it could not be read) or steal ns + 1
//               (steal ns <= the event's dur ns). An event of a CATCH frame without a STEAL
//               frame has no steal time (not kept, never 0 as if measured). A STEAL frame
//               without its CATCH frame just before it, or with another n, is damage.
//   Unknown frame types (of later minor versions) are skipped by readers: a 1.2 reader
//   reads a 1.3 file as if it had no EXACT frames, a 1.3 reader a 1.4 file as if it had
//   no GAPS frames, a 1.4 reader a 1.5 file as if it had no CATCH frames, a 1.5 reader a
//   1.6 file as if its caught events had no steal time (RecordingReader::next_state's default).
//
// Versions: 1.0 (first release), 1.1 (INDEX entries carry the sample ordinal; END carries
// the INDEX offset and time span), 1.2 (ONLINE frames: CPU hotplug during a run), 1.3
// (EXACT frames: --exact), 1.4 (GAPS frames: the probes' gap state, META gap_lines), 1.5
// (CATCH frames: --catch, META catch_rules), 1.6 (STEAL frames: caught events' steal time). A reader reads every minor of its major and
// refuses a newer major.
//
// A reader stops at the first frame that is truncated or fails its CRC, says where and
// why, and keeps everything before it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sample/sample.h"
#include "sys/output_file.h"

namespace schedhot {

inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 6;
inline constexpr uint32_t kKeyframeEvery = 64;
inline constexpr uint32_t kMaxFramePayload = 256u << 20;  ///< reader's limit, bytes
/// The reader's limit for a META or NOTE frame (JSON), bytes: an 8192-CPU host's META is
/// under 2 MiB; a crafted 240 MB one took 5.3 GB to parse.
inline constexpr uint32_t kMaxJsonFramePayload = 16u << 20;
inline constexpr uint32_t kFileHeaderBytes = 32;
inline constexpr uint32_t kFrameHeaderBytes = 24;
inline constexpr uint32_t kEndPayloadBytes = 32;                               ///< 1.1 END payload
inline constexpr uint32_t kEndFrameBytes = kFrameHeaderBytes + kEndPayloadBytes;  ///< 56
inline constexpr uint32_t kIndexEntryBytes = 24;                               ///< 1.1 INDEX entry
/// Largest sample state (CPUs x slot words of every probe) a reader accepts: 40 Mi words
/// (320 MiB), 1.5x the state of an 8192-CPU machine with every probe (8192 x 3456 words).
/// A sparse keyframe of idle CPUs is tiny, so a few-KiB crafted file can claim this much:
/// the bound keeps it to what a genuine 8192-CPU recording costs (report: about 1.5 GB).
inline constexpr uint64_t kMaxStateWords = 40ull << 20;
/// Largest CPU count a reader accepts: the kernel's largest NR_CPUS (x86 MAXSMP, ppc64).
inline constexpr uint32_t kMaxCpus = 8192;
/// Most GAPS frame entries of one CPU a reader accepts: the probes' per-CPU line table
/// (abi.h SH_GAP_LINES, lines kept for the run; ProbeSet::take_gaps merges an entry claimed
/// twice), so a frame of an 8192-CPU machine holds at most 8192 x 16 entries (about 92 MB
/// decoded) whatever its payload claims.
inline constexpr uint32_t kMaxGapEntriesPerCpu = SH_GAP_LINES;
/// Longest stack frame symbol in a CATCH frame, bytes: the kernel's KSYM_NAME_LEN (512
/// since 6.1, for Rust symbols) less its NUL.
inline constexpr uint32_t kMaxCatchSymbolBytes = 512;
/// Longest comm of a caught event, bytes: TASK_COMM_LEN less its NUL.
inline constexpr uint32_t kMaxCatchCommBytes = 15;
/// Most memory one decoded CATCH frame may take, bytes (its events, stacks with their
/// frames' symbol text, symbol table): a genuine frame of 100k events and 10k distinct
/// 24-frame stacks takes about 25 MiB; a small crafted one naming a 512-byte symbol from
/// millions of frames would take gigabytes.
inline constexpr uint64_t kMaxCatchDecodedBytes = 256ull << 20;

enum class FrameType : uint8_t { meta = 1, sample = 2, index = 3, end = 4, note = 5, online = 6, exact = 7, gaps = 8,
                                caught = 9, steal = 10 };

/// Payload bytes of a 1.2 ONLINE frame for ncpus CPUs: one bit per CPU.
inline constexpr uint32_t online_bitmap_bytes(uint32_t ncpus) { return (ncpus + 7) / 8; }

/// One INDEX entry (1.1): where a keyframe is.
struct IndexEntry {
  uint32_t ordinal;  ///< 0-based number of the sample in its file
  uint32_t seq;
  uint64_t mono_ns;
  uint64_t offset;  ///< of its frame header
};

class PreparedOutput;

/// Writer options.
struct WriterOptions {
  bool compress = true;      ///< zstd sample payloads when smaller
  int zstd_level = 3;
  bool overwrite = false;    ///< replace an existing file (default: refuse)
  /// When > 0, the file including its closing INDEX and END frames never grows past this
  /// many bytes: write_sample()/write_status() return false instead of writing.
  uint64_t max_bytes = 0;
  /// The output opened ahead (record: at launch, before attaching and before --start-at),
  /// taken by the first writer of its path instead of opening the path then: whatever
  /// appears at the path after it was opened (a symlink planted while waiting) is never
  /// followed or truncated. nullptr: the writer opens the path itself.
  PreparedOutput* prepared = nullptr;
};

/// A recording's output opened now and written later (WriterOptions::prepared). The open
/// is the writer's (symlinks present now resolved once, O_EXCL creation, an existing
/// regular file replaced only with overwrite, through a new file beside it renamed over it
/// once the header and META are written), so the file the writer produces is byte for byte
/// the same. Not taken by a writer: closed, and a file it created removed (if still the one
/// it created). Throws like RecordingWriter's constructor.
class PreparedOutput {
 public:
  PreparedOutput(const std::string& path, bool overwrite);
  /// A file the caller created itself (record --flight: openat(O_CREAT | O_EXCL |
  /// O_NOFOLLOW) in a directory it holds open), fd owned from now on; made names it so a
  /// writer that cannot write the header removes it again (OwnedFile::remove).
  PreparedOutput(const std::string& path, int fd, OwnedFile made);
  ~PreparedOutput();
  PreparedOutput(const PreparedOutput&) = delete;
  PreparedOutput& operator=(const PreparedOutput&) = delete;
  const std::string& path() const { return path_; }

 private:
  friend class RecordingWriter;
  std::string path_;
  int fd_ = -1;
  OwnedFile created_;     ///< the file it created ({} when it opened one that was there)
  std::string replaces_;  ///< with overwrite over a regular file: the file created_ replaces
};

/// Appends a recording. Every frame goes to the kernel with one write() as soon as it is
/// complete, so a killed writer leaves every complete frame readable.
class RecordingWriter {
 public:
  /// Creates path ("-" = stdout) and writes the header and META frame. With
  /// WriterOptions::overwrite an existing regular file is truncated, and a device or a FIFO
  /// with a reader is written in place; a terminal and a FIFO without a reader are
  /// refused. Throws std::runtime_error with a one-line message (exists, no space,
  /// permission...); when the header or META cannot be written, the file is removed only
  /// if this writer created it (never one that was there, never a non-regular file).
  RecordingWriter(const std::string& path, const Meta& meta, WriterOptions opts = {});
  ~RecordingWriter();
  RecordingWriter(const RecordingWriter&) = delete;
  RecordingWriter& operator=(const RecordingWriter&) = delete;

  /// Appends one sample (shaped like the Meta's probes), preceded by its EXACT frame when
  /// s.exact is set (1.3; its records with the times they have) and its GAPS frame when
  /// s.gaps is set (1.4; as given: a batch that breaks the frame's rules, out of order,
  /// naming a CPU or line META does not have, from_ns after s.mono_ns, throws
  /// std::runtime_error before anything is written), and its CATCH frame when s.caught is
  /// set (1.5; likewise: an event out of time order or outside (previous sample, s.mono_ns],
  /// a CPU or probe META does not have, a bad stack index, symbol or comm throws). Returns false, writing nothing,
  /// when the frame would take the closed file past WriterOptions::max_bytes. Throws
  /// std::runtime_error on a write error (disk full...): the partial frame is cut off
  /// again where possible, the file is closed without END, and every frame before it
  /// stays readable.
  bool write_sample(const Sample& s);
  /// Appends a NOTE frame: probe's status changed. false (nothing written) when it would
  /// not fit under max_bytes. Throws like write_sample().
  bool write_status(const ProbeStatus& status);
  /// Writes INDEX and END, fsyncs and closes. Idempotent. Throws on a write error.
  void close();

  /// Bytes in the file so far.
  uint64_t bytes() const { return offset_; }
  /// Sample frames written.
  uint32_t samples() const { return nsamples_; }
  const std::string& path() const { return path_; }
  /// The file being written is still the one named path() (not moved away or replaced by
  /// another file since it was opened); true when writing to stdout or a given fd.
  bool still_at_path() const;

 private:
  void write_frame(FrameType t, uint8_t flags, uint64_t mono_ns, const std::string& payload);
  /// A frame payload zstd-compressed in place (flags gets kFlagZstd) when compression is on,
  /// the payload is over 256 bytes and the result is smaller; else left as it is.
  void compress_if_smaller(std::string& payload, uint8_t& flags) const;
  /// The file stays within max_bytes after a frame of payload_bytes (and, if keyframe, one
  /// more INDEX entry) plus the closing INDEX and END frames.
  bool fits(size_t payload_bytes, bool keyframe) const;
  void fail_close();
  /// fail_close(), then unlinks created_ if it still names the regular file this writer
  /// created (OwnedFile::remove). true when it did.
  bool remove_created();
  int fd_ = -1;
  bool own_fd_ = true;
  OwnedFile created_;  ///< the file this writer created (O_EXCL), {} if it opened an existing one
  std::string replaces_;  ///< with --force over a regular file: the file created_ is renamed over once it has its META
  std::string path_;
  WriterOptions opts_;
  Meta meta_;
  Sample prev_;
  bool have_prev_ = false;
  std::vector<int> online_written_;  ///< the online set of the last ONLINE frame ({} = none yet)
  uint64_t offset_ = 0;
  uint32_t nsamples_ = 0;
  uint64_t first_mono_ = 0, last_mono_ = 0;
  std::vector<IndexEntry> index_;
};

/// Where and why reading stopped early.
struct Damage {
  uint64_t offset = 0;   ///< byte offset of the bad frame
  std::string reason;    ///< one line
};

/// The one line every command says about a damaged file it read up to the damage:
/// "FILE is damaged at byte N: REASON; VERB the K samples before it" (verb: "reported",
/// "exported"), so report and export word it alike.
std::string damage_line(const std::string& file, const Damage& d, const char* verb, uint64_t samples);

/// Following a recording that is still being written (tail -f): at the end of the file,
/// or at a last frame that is not complete yet, the reader waits and retries instead of
/// reporting damage. It stops at the END frame (the writer closed the file, which
/// includes a rotation), when *stop becomes true, or after idle_timeout_ns without growth
/// (then an incomplete last frame is reported as damage, as without following).
struct FollowOptions {
  bool enabled = false;
  uint64_t poll_ns = 100'000'000;       ///< how often to look for new bytes, ns
  const std::atomic<bool>* stop = nullptr;  ///< stop waiting when it becomes true (may be null)
  uint64_t idle_timeout_ns = 0;         ///< give up after this long without growth, ns (0 = never)
};

/// What a closed 1.1 file's END and INDEX frames say (found from the file's end).
struct IndexInfo {
  uint32_t samples = 0;        ///< sample frames in the file
  uint64_t first_mono_ns = 0;  ///< first sample's CLOCK_MONOTONIC ns
  uint64_t last_mono_ns = 0;   ///< last sample's
  uint64_t index_offset = 0;   ///< of the INDEX frame
  uint64_t end_offset = 0;     ///< of the END frame
  size_t entries = 0;          ///< keyframes listed
};

/// Counts of what next() has read since open (seeks read frames again and count them again).
struct ReadStats {
  uint64_t sample_frames = 0;
  uint64_t keyframes = 0;
  uint64_t compressed = 0;     ///< sample frames stored with zstd
  uint64_t sample_bytes = 0;   ///< bytes of sample frames as stored, headers included
  uint64_t raw_bytes = 0;      ///< their payload bytes after decompression
  uint64_t note_frames = 0;
  uint64_t online_frames = 0;  ///< 1.2 ONLINE frames
  uint64_t exact_frames = 0;   ///< 1.3 EXACT frames
  uint64_t exact_records = 0;  ///< records in them
  uint64_t exact_lost = 0;     ///< lost records they report
  uint64_t gap_frames = 0;     ///< 1.4 GAPS frames
  uint64_t gap_entries = 0;    ///< (CPU, line) entries in them
  uint64_t caught_frames = 0;  ///< 1.5 CATCH frames
  uint64_t caught_events = 0;  ///< events in them
  uint64_t caught_lost = 0;    ///< lost records they report
  uint64_t steal_frames = 0;   ///< 1.6 STEAL frames
  uint64_t unknown_frames = 0; ///< frame types of a later minor version, skipped
  uint64_t first_mono_ns = 0;  ///< first sample read
  uint64_t last_mono_ns = 0;   ///< last sample read
};

/// Reads a recording: report, replay, export and info all use this one reader. It never
/// trusts a length or count from the file: every size is checked against the file's size
/// and fixed limits before anything is allocated.
class RecordingReader : public SampleSource {
 public:
  /// Opens path and reads the header and META, then looks for the END/INDEX trailer.
  /// Throws std::runtime_error with a one-line message: not a recording, future major
  /// version, damaged header or metadata.
  static std::unique_ptr<RecordingReader> open(const std::string& path);
  /// Like open(path) followed by set_follow(follow); when follow.enabled it also waits
  /// (per follow) for the file to appear and for its header and META to be complete.
  static std::unique_ptr<RecordingReader> open(const std::string& path, const FollowOptions& follow);
  ~RecordingReader() override;

  const Meta& meta() const override { return meta_; }
  /// Next sample, false at the end or at the first damaged frame (see damage()). When
  /// following, waits for the writer instead of stopping at the end (FollowOptions).
  bool next(Sample& out) override;
  /// Reads the next sample as next() does (decoded: later deltas build on it; NOTE frames
  /// on the way applied) without copying it out: a 480-CPU sample is ~13 MB.
  bool skip() { return next_state(); }
  /// Whether the decoder's state is s's (every probe present in s has the same non-zero
  /// stamp): the next sample is then decoded from it in place, with what changed kept
  /// (SlotDelta), and s's words may be let go of (SampleSource::continues).
  bool continues(const Sample& s) const override;
  /// Gives s (hollow, continues() held for it) its words back after a next() that
  /// returned false: the state is still s's (the end, a damaged frame), or the failed or
  /// refused sample's changes are undone on a copy (SlotWords::refill). false when a
  /// probe's state cannot be brought back (the reader moved on: a seek).
  bool restore(Sample& s) override;

  /// Turns following on or off (FollowOptions), from the next next() on.
  void set_follow(const FollowOptions& follow) { follow_ = follow; }
  /// Shorthand: following on/off with the current poll interval, stop flag and timeout.
  void set_follow(bool on) { follow_.enabled = on; }
  const FollowOptions& follow() const { return follow_; }

  /// Set when reading stopped at a bad frame.
  const std::optional<Damage>& damage() const { return damage_; }
  /// An END frame was read (by next() or sample_positions()): the writer closed the file.
  bool saw_end() const { return saw_end_; }
  const std::string& path() const { return path_; }
  /// The path now names another file than the one open, or none (the writer rotated
  /// it: FILE became FILE.1 and a new FILE is being written).
  bool path_replaced() const;
  uint16_t major() const { return major_; }
  uint16_t minor() const { return minor_; }
  /// Frames read and CRC-checked so far (META included).
  uint64_t frames() const { return frames_; }
  uint64_t file_bytes() const { return file_bytes_; }
  /// Offset of the first frame after META.
  uint64_t data_start() const { return data_start_; }
  const ReadStats& stats() const { return stats_; }
  /// Status changes read so far (NOTE frames), in order.
  const std::vector<ProbeStatus>& status_notes() const { return notes_; }

  /// The END/INDEX trailer of a closed 1.1 file, when present and consistent (bounds,
  /// CRCs, ordering); nullopt otherwise (1.0 file, still being written, killed writer,
  /// damaged tail) and then seeks fall back to scanning the frames.
  const std::optional<IndexInfo>& index() const { return index_; }
  /// Why a trailer that is present was not used ("" when it was, or when there is none).
  const std::string& index_problem() const { return index_problem_; }

  /// Where one sample frame is.
  struct SamplePos {
    uint32_t seq = 0;      ///< sample number in this file, 0-based
    uint64_t mono_ns = 0;
    uint64_t offset = 0;   ///< of its frame header
    bool keyframe = false;
  };
  /// Every sample's position. With an index: from the index and the frame headers
  /// (payloads not read). Without: by reading and CRC-checking every frame (and parsing
  /// NOTE frames), stopping at the first damaged one like next(). When following, each
  /// call extends the list with the frames written since.
  const std::vector<SamplePos>& sample_positions();
  /// Reads and CRC-checks every frame to the end of the file, index or not (sample
  /// payloads are not decoded; NOTE frames are parsed, ONLINE frames decoded and each STEAL
  /// frame's place checked, as next() does): afterwards damage() and saw_end() say what next() would find by reading
  /// everything, but for what only decoding finds (a bad EXACT, GAPS, CATCH or STEAL
  /// payload). Whichever finds damage, damage() is the earliest bad frame found (a later
  /// one the scan named is replaced when next() meets an earlier one). Leaves next()'s
  /// position alone. Not for a followed file.
  void check_all_frames();
  /// Number of samples: the index's count when present, else sample_positions().size().
  size_t sample_count();
  /// Makes the next next() return sample number i (0-based): decodes forward from the
  /// keyframe at or before it (found in the index when present). false when i is out of
  /// range or a frame on the way is damaged. That sample comes without gaps and without
  /// caught events (its interval starts at a sample next() did not return).
  bool seek_sample(size_t i);
  bool seek_index(size_t i) override { return seek_sample(i); }
  /// Makes the next next() return the first sample with mono_ns >= t. false if none.
  bool seek_time(uint64_t mono_ns) override;
  /// The probes of the NOTE frames read since the last call (meta() has their statuses;
  /// status_notes() lists them all).
  std::vector<int> take_status_changes() override;

  /// The CPUs online at some point between CLOCK_MONOTONIC from_ns and to_ns (inclusive),
  /// ascending: the online set of the last sample at or before from_ns, of every sample
  /// in the window (1.2 ONLINE frames; frame headers are walked, only ONLINE payloads
  /// read), and every CPU whose slot words differ between the window's first and last
  /// samples (it counted something, so it ran). For 1.0/1.1 files this is META
  /// host.online plus the CPUs that counted. Leaves next()'s position undefined: seek
  /// afterwards. Empty when nothing says (no online list in META and no samples).
  std::vector<int> online_cpus(uint64_t from_ns = 0, uint64_t to_ns = UINT64_MAX);

 private:
  RecordingReader() = default;
  struct Frame {
    FrameType type{};
    uint8_t flags = 0;
    uint64_t mono_ns = 0;
    uint64_t at = 0;         ///< offset of its header
    uint64_t bytes = 0;      ///< header + payload
    std::string payload;
  };
  enum class ReadStatus { ok, eof, incomplete, bad, crc };
  /// Reads and checks the frame at offset at. eof: no byte there; incomplete: the file
  /// ends inside it; bad: garbage or an impossible length; crc: CRC mismatch. why says
  /// how. Without want_payload only the header is read and checked (no CRC).
  ReadStatus read_frame_at(uint64_t at, Frame& f, std::string& why, bool want_payload = true);
  /// Sequential read at pos_, following (waiting) when enabled. false at the end or on
  /// damage (then damage_ is set).
  bool read_next_frame(Frame& f);
  /// A NOTE frame's payload as a status; false with why ("bad note frame: ...") when it is
  /// not one (bad JSON, nested too deep, wrong shape, over kMaxJsonFramePayload, its two probe
  /// names disagreeing, a probe the META does not list).
  bool parse_note(const std::string& payload, ProbeStatus& out, std::string& why) const;
  /// Applies a sample payload to state_ (in place; have_state_ false until it succeeds) and
  /// sets its online set (sample_codec.h decode_sample).
  bool decode_sample(const std::string& payload, bool keyframe, std::string& why);
  /// Parses an ONLINE payload into online_ (have_online_ set). false (with why) when malformed.
  bool decode_online(const std::string& payload, std::string& why);
  /// An EXACT frame (raw or zstd) into pending_exact_; false (with why) when malformed.
  bool decode_exact(const Frame& f, std::string& why);
  /// A GAPS frame (raw or zstd) into pending_gaps_; false (with why) when malformed.
  bool decode_gaps(const Frame& f, std::string& why);
  /// A CATCH frame (raw or zstd) into pending_caught_; false (with why) when malformed.
  bool decode_caught(const Frame& f, std::string& why);
  /// A STEAL frame (raw or zstd) onto pending_caught_ (its CATCH frame); false (with why) when
  /// malformed or without its CATCH frame.
  bool decode_steal(const Frame& f, std::string& why);
  /// An EXACT, GAPS or CATCH frame's payload, decompressed (what: "exact", "gaps", "catch" for why), with
  /// the decompression ratio bounded (a bomb is refused).
  static bool unpack_frame(const Frame& f, const char* what, std::string& raw, std::string& why);
  /// state_.online from online_ when known, else META host.online plus nonzero_cpu_.
  void set_state_online();
  /// next() without the copy out: advances state_ to the next sample. returned: the
  /// caller hands it out (next(), skip()), not a seek decoding its way to a sample; a
  /// sample's gaps are kept only when they start at the sample returned just before.
  bool next_state(bool returned = true);
  /// The frame's sample payload, decompressed (takes f.payload when stored raw).
  bool unpack_sample(Frame& f, std::string& raw, std::string& why) const;
  void set_damage(uint64_t at, std::string why);
  void load_index();
  bool positions_from_index();
  void scan_positions();
  enum class Wait { retry, stopped, timeout };
  /// When following: sleeps one poll interval (retry), or says why following ends.
  Wait wait_for_growth();
  /// One attempt at reading the header and META. false (with why) when they are not
  /// complete yet; throws std::runtime_error when they are wrong.
  bool try_open(std::string& why);
  uint64_t refresh_size();

  int fd_ = -1;
  std::string path_;
  uint64_t pos_ = 0;
  uint64_t file_bytes_ = 0;
  uint16_t major_ = 0, minor_ = 0;
  Meta meta_;
  Sample state_;
  bool have_state_ = false;
  std::string raw_;  ///< the last sample frame's payload, decompressed (its buffer reused)
  std::vector<int> online_;          ///< the last ONLINE frame's CPUs (1.2)
  bool have_online_ = false;         ///< online_ holds for the samples decoded since
  std::optional<ExactBatch> pending_exact_;  ///< the last EXACT frame, for the next sample
  uint64_t pending_exact_ns_ = 0;            ///< its mono_ns
  std::optional<GapBatch> pending_gaps_;     ///< the last GAPS frame, for the next sample
  uint64_t pending_gaps_ns_ = 0;             ///< its mono_ns
  std::optional<CatchBatch> pending_caught_;  ///< the last CATCH frame, for the next sample
  uint64_t pending_caught_ns_ = 0;             ///< its mono_ns
  bool pending_steal_ = false;                 ///< a STEAL frame was applied to pending_caught_
  bool after_seek_ = false;  ///< no sample returned since the last seek (its first gets no CATCH frame)
  std::optional<uint64_t> returned_ns_;      ///< mono_ns of the last sample next()/skip() returned
  std::vector<char> nonzero_cpu_;    ///< per CPU: a slot word of state_ is non-zero
  std::optional<Damage> damage_;
  bool saw_end_ = false;
  uint64_t frames_ = 0;
  std::vector<ProbeStatus> notes_;
  size_t notes_taken_ = 0;  ///< notes_ returned by take_status_changes()
  uint64_t data_start_ = 0;  ///< first frame after META
  ReadStats stats_;
  FollowOptions follow_;
  uint64_t idle_since_ns_ = 0;   ///< when following: last time the file grew (0 = not waiting)
  uint64_t idle_size_ = 0;
  int crc_retries_ = 0;

  std::optional<IndexInfo> index_;
  std::string index_problem_;
  std::vector<IndexEntry> index_entries_;

  bool scan_done_ = false;
  uint64_t scan_pos_ = 0;
  std::optional<uint64_t> scan_catch_ns_;  ///< the scan's CATCH frame since its last SAMPLE frame (mono_ns)
  bool scan_steal_ = false;                ///< the scan saw a STEAL frame after scan_catch_ns_'s CATCH frame
  std::vector<SamplePos> positions_;
};

}  // namespace schedhot
