// A hot object: everything schedhot knows about one shared kernel object whose cachelines
// its probes touch, in one place (src/probe/objects/<object>.{h,cpp}): how its layout is read
// from BTF and the symbol table, its layout struct (a part of CoherenceLayout), the lines
// the coherence model tracks in it, where each of its kernel fields lives (FieldTarget), the
// shown names of its lines, the seed-patch fix it detects, the seed patches it can replay
// (what-ifs), the layout assumed for a recording without one (Debian's) and its part of the
// recorded META JSON. The registry (hot_objects(), objects.cpp) is the list of objects;
// code outside an object asks the object rather than testing its name.
//
// Adding a field to an object: its member in the object's layout struct, read in read(),
// placed in lines() and field_target(), written and checked in to_json()/from_json(); probe
// modules then name it in their FieldAccess list. Adding an object: its files here, its
// layout part in CoherenceLayout (probe/layout.h), a line in hot_objects().
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

struct btf;  // libbpf
struct btf_type;

namespace schedhot {

class SymbolTable;
struct CoherenceLayout;

/// One member of a kernel struct, as BTF gives it: name, byte offset in its struct, byte
/// size (btf__resolve_size of its type).
struct MemberLayout {
  std::string name;
  int64_t offset = 0;
  int64_t size = 0;
};

/// One field in a modeled line. offset: bytes from the start of LineDef::object (nullopt
/// when not known: the line is modeled on LineDef::assumption); size: bytes (nullopt:
/// unknown until learned, e.g. an OFFSTACK bitmap of cpumask_size() bytes).
struct LineField {
  std::string name;
  std::optional<int64_t> offset;
  std::optional<int64_t> size;
};

/// One cacheline the coherence model tracks.
struct LineDef {
  /// "nohz" (or "nohz.line<k>" when the struct spans lines), "nohz.idle_cpus_mask" (the
  /// separate OFFSTACK bitmap), "cpupri.vec[0]" (the line holding pri_to_cpu[0]'s first
  /// byte), "cpupri.line<k>" (line k of root_domain, grouping the vectors in it),
  /// "cpupri.vec[<i>].mask" (an OFFSTACK bitmap), "cpupri.cpu_to_pri", "tick_broadcast_lock".
  std::string id;
  /// What offsets are relative to: "nohz", "root_domain", "cpu_to_pri[]",
  /// "nohz.idle_cpus_mask bitmap", "cpupri.vec[i].mask bitmap", "tick_broadcast_lock line".
  std::string object;
  std::optional<int64_t> line_offset;   ///< start of this line from the start of object
  std::vector<LineField> fields;        ///< every field that overlaps the line
  /// "static", "in root_domain (kzalloc)", or "separate, address unknown until learned".
  std::string allocation;
  /// The line's address: known for static data found in the symbol table. The hook for BPF
  /// address learning (cp->pri_to_cpu[i].mask, cp->cpu_to_pri, rd): set it and address_known.
  std::optional<uint64_t> address;
  bool address_known = false;
  /// For a per-CPU element array (cpu_to_pri[]): elements (CPUs) per line, else 0.
  int cpus_per_line = 0;
  /// "" when every fact came from BTF/kallsyms; else what is assumed, one line.
  std::string assumption;
};

/// Where a kernel field of FieldAccess::field lives: byte `base` of `object` (line-aligned,
/// line_bytes lines); fixed (one line), bit (CPU c's word of a cpumask: base + c/64*8),
/// int32 (CPU c's int: base + 4c) or scan (every word of an nbits-bit cpumask).
struct FieldTarget {
  std::string object, family, assumption;
  int64_t base = 0;
  enum Mode { fixed, bit, int32, scan } mode = fixed;
  int64_t nbits = 0;
  /// The line(s) of the object an access from `cpu` touches, appended to out.
  void lines(int cpu, int line_bytes, std::vector<int64_t>& out) const;
  /// A cpumask of nbits bits at byte base of object: CPU c's word when per_cpu (mode bit),
  /// else every word (mode scan).
  static FieldTarget cpumask(std::string object, std::string family, int64_t base, int64_t nbits,
                             std::string assumption, bool per_cpu);
};

/// A seed patch: the kernel fields it removes (replays: the model replays it on the
/// patched layout) or, when it has nothing to replay, why (said, never left out).
struct WhatIf {
  std::string id;        ///< "nohz_nr_cpus", "cpupri_count"
  std::string title;     ///< "sched/fair: Remove nohz.nr_cpus (5d86d542, v7.0)"
  std::string family;    ///< the lines it changes
  bool replays = true;   ///< false: nothing to replay (HotObject::what_if_reason() says why)
  int rank = 0;          ///< its place in the report's what-if list (ascending)
};

/// One seed-patch fix as a layout shows it (HotObject::fix()).
struct Fix {
  std::string key;           ///< JSON key and metric label: "nohz_nr_cpus_removed"
  std::string subject;       ///< what it is about, shown: "nohz.nr_cpus", "tick_broadcast_lock"
  std::optional<bool> present;  ///< the fix is in; nullopt unknown (reason)
  std::string reason;        ///< why unknown ("nohz struct not found in BTF", "unknown: KALLSYMS_ALL off ...")
  std::string yes, no;       ///< what follows subject: "removed (fix present)", "present (fix absent)"
  std::string short_subject; ///< the short form's subject: "nohz.nr_cpus", "bcast_lock line"
  std::string short_yes, short_no;  ///< "gone" / "present", "alone" / "shared"
  std::string legend;        ///< the fix in a few words (fleet's FIX legend): "nohz.nr_cpus removed"
  /// The probe whose p99 fleet flags while the fix is absent ("cpupri_set"), "" none.
  std::string flag_probe;
};

/// What read() reads from. btf may be null (no BTF: every BTF fact missing, with notes);
/// syms may be null or empty (no static addresses). btf_source / syms_source name them in
/// notes ("BTF" / "the symbol table" when not known).
struct ReadInputs {
  const struct btf* btf = nullptr;
  const SymbolTable* syms = nullptr;
  int line_bytes = 64;
  std::string btf_source, syms_source;
};

class HotObject {
 public:
  virtual ~HotObject() = default;
  /// Its name: the family of its lines, the prefix of its fields ("nohz." or the name
  /// itself) and its key in the layout's JSON: "nohz", "cpupri", "tick_broadcast_lock".
  virtual std::string_view name() const = 0;
  /// Reads its part of l (CoherenceLayout) from in, appending one note or more to l.notes:
  /// what was read from where, or which line is then modeled on an assumption. Never throws
  /// for a kernel that lacks the object: that is a missing part and a note.
  virtual void read(const ReadInputs& in, CoherenceLayout& l) const = 0;
  /// Its modeled lines (layout.h modeled_lines()), appended to out. A missing part still
  /// yields its line(s) with LineDef::assumption set.
  virtual void lines(const CoherenceLayout& l, std::vector<LineDef>& out) const = 0;
  /// The target of its kernel field f ("[cpu]" removed: per_cpu says it was there, "#"
  /// already replaced) on a machine of ncpus possible CPUs; nullopt when f is not its own or
  /// this kernel lacks it.
  virtual std::optional<FieldTarget> field_target(const std::string& f, bool per_cpu, int ncpus,
                                                  const CoherenceLayout& l) const = 0;
  /// The shown name of line `line` of `object` when the object is one its fields map to
  /// (FieldTarget::object), nullopt when not its own.
  virtual std::optional<std::string> line_name(const std::string& object, int64_t line, const CoherenceLayout& l) const = 0;
  /// The seed-patch fix it detects in l.
  virtual Fix fix(const CoherenceLayout& l) const = 0;
  /// Its seed patches (what-ifs), replayable or not. Default none.
  virtual std::vector<WhatIf> what_ifs() const;
  /// "" when w (one of its what_ifs()) applies to l (the kernel still has what it removes),
  /// else why not. Default "".
  virtual std::string what_if_reason(const WhatIf& w, const CoherenceLayout& l) const;
  /// l as the patched kernel would have it: w's field removed and the struct re-laid out;
  /// unchanged when w does not apply. Default: unchanged.
  virtual void apply(const WhatIf& w, CoherenceLayout& l) const;
  /// Sets its part of l to Debian's shape for kernel major version `major` (CPUMASK_OFFSTACK=y);
  /// returns what the layout note says of it ("nohz with nr_cpus"), "" nothing.
  virtual std::string assume(int major, CoherenceLayout& l) const = 0;
  /// Where its placement came from when it is not BTF (a static address: "0x... from
  /// /proc/kallsyms", "unknown (WHY)"), for the layout's one-line source; "" nothing to say.
  /// Default "".
  virtual std::string source_text(const CoherenceLayout& l) const;
  /// Its part of the layout's JSON (null when absent).
  virtual nlohmann::json to_json(const CoherenceLayout& l) const = 0;
  /// Reads its part j into l (after l.line_bytes), checking every number; throws
  /// std::runtime_error with a one-line "coherence layout: ..." message.
  virtual void from_json(const nlohmann::json& j, CoherenceLayout& l) const = 0;
};

/// Every hot object, in the order of their lines, notes and fixes: nohz, cpupri,
/// tick_broadcast_lock.
const std::vector<const HotObject*>& hot_objects();
/// Every object's what-ifs by WhatIf::rank.
const std::vector<WhatIf>& all_what_ifs();
/// The object a what-if (by id) belongs to, or nullptr.
const HotObject* what_if_owner(std::string_view id);

// The objects (src/probe/objects/*.cpp).
const HotObject& nohz_object();
const HotObject& cpupri_object();
const HotObject& tick_broadcast_lock_object();

namespace objects {

/// The largest struct size or offset a recorded layout may give: no struct here comes near 1 MiB.
inline constexpr int64_t kMaxBytes = int64_t(1) << 20;

// BTF helpers for the objects' read().
std::string btf_name(const struct btf* btf, uint32_t off);
/// The type after typedefs and modifiers (const, volatile, ...), or nullptr.
const struct btf_type* btf_resolved(const struct btf* btf, uint32_t id);
/// The members of struct type t, each with its byte offset, resolved size and type id.
std::vector<std::pair<MemberLayout, uint32_t>> btf_members_of(const struct btf* btf, const struct btf_type* t);
/// A member by name (its type id in *type), or nullptr.
const MemberLayout* find_member(const std::vector<std::pair<MemberLayout, uint32_t>>& ms, std::string_view name,
                                uint32_t* type = nullptr);
/// A cpumask_var_t member: pointer (OFFSTACK=y) or inline bitmap (bytes).
void cpumask_shape(const struct btf* btf, uint32_t type_id, bool& is_pointer, int64_t& bytes);
/// "a, b, c": the members' names.
std::string join_names(const std::vector<MemberLayout>& ms);
/// Whether a byte range [off, off + max(size, 1)) overlaps [lo, hi).
inline bool overlaps(int64_t off, int64_t size, int64_t lo, int64_t hi) {
  return off < hi && off + (size > 1 ? size : 1) > lo;
}
/// Moves members down, each to its natural alignment (min(size, 8)) after the previous one,
/// sorted by offset: what the compiler does when a member goes.
void relayout(std::vector<MemberLayout*>& ms);

// JSON helpers for the objects' to_json()/from_json().
nlohmann::json member_json(const MemberLayout& m);
/// j[key], an integer in lo..hi, else std::runtime_error "coherence layout: WHAT.KEY ...".
int64_t checked(const nlohmann::json& j, const char* key, const std::string& what, int64_t lo = 0, int64_t hi = kMaxBytes);
/// A member object, checked to lie in its struct of struct_size bytes.
MemberLayout member_from(const nlohmann::json& j, const std::string& what, int64_t struct_size);

/// The assumption of a field in a separate allocation whose address is not learned.
inline constexpr const char* kSeparate =
    "a separately allocated bitmap, modeled as its own line-aligned object (slab neighbours not known)";

/// "reason" without its leading "unknown: ".
std::string without_unknown(const std::string& reason);

}  // namespace objects

}  // namespace schedhot
