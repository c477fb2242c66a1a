// The narrow interface between the attacher (attacher.h) and the kernel: a BpfLoader
// loads one BPF object with the programs asked for and attaches them, maps a probe's
// slots, and frees it again. attach.cpp implements it with libbpf and the skeleton;
// the unit tests (tests/unit/test_attach.cpp) with a fake that fails per (backend,
// symbol), so every attach rule runs without BPF. No skeleton or libbpf header here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "probe/module.h"

namespace schedhot {

/// A loaded object, as the loader numbers them; kNoLoad for none.
using LoadHandle = int;
inline constexpr LoadHandle kNoLoad = -1;

/// One program to enable: the module's program for (backend, role, index) and, for
/// function backends, the symbol to attach to.
struct ProgRequest {
  Backend backend = Backend::none;
  ProgRole role = ProgRole::entry;
  int index = 0;        ///< site index (ProgRole::site) or TpProgram index (ProgRole::tracepoint)
  std::string target;   ///< fentry/kprobe target; "" for tracepoints
  bool retprobe = false;
  uint64_t addr = 0;    ///< kprobe at this address (several of that name) rather than by name
};

/// One object to load: a fresh BPF object with only progs enabled, the module's slots
/// map sized for every CPU (or shared with an earlier load of the same probe).
struct LoadRequest {
  const ProbeModule* module = nullptr;
  std::vector<ProgRequest> progs;
  std::string what;                   ///< what is attached, for error messages
  LoadHandle share_slots = kNoLoad;   ///< use this earlier load's slots map (another copy)
  /// Attach each program on its own (a sites probe's final object): an attach failure
  /// is reported in LoadResult::attach_errs and the object kept; only a load failure fails.
  bool partial = false;
};

/// Outcome of a LoadRequest.
struct LoadResult {
  LoadHandle handle = kNoLoad;  ///< the loaded, attached object; kNoLoad when it failed
  int err = 0;                  ///< positive errno when failed
  std::string error;            ///< one line when failed (describe_attach_error, verifier hint)
  bool at_load = false;         ///< failed while loading (verifier/policy) rather than attaching
  std::vector<int> attach_errs; ///< partial: per program, 0 when attached, else its errno
  bool ok() const { return handle != kNoLoad; }
};

/// A probe's slots, mapped read-only: ncpus * slot_words words.
struct SlotMapping {
  const uint64_t* words = nullptr;
  int err = 0;  ///< errno when the mapping failed
};

class BpfLoader {
 public:
  virtual ~BpfLoader() = default;
  /// Opens, configures (every module's .rodata), loads and attaches one object.
  virtual LoadResult load_attach(const LoadRequest& req) = 0;
  /// Maps the slots of a loaded object read-only (valid until release).
  virtual SlotMapping map_slots(LoadHandle h) = 0;
  /// Detaches and frees a loaded object (and its mapping).
  virtual void release(LoadHandle h) = 0;
  /// The skeleton of a loaded object, for ProbeModule::after_attach; nullptr in fakes.
  virtual schedhot_bpf* object(LoadHandle h) = 0;
  /// File descriptors of the object's loaded programs.
  virtual std::vector<int> program_fds(LoadHandle h) = 0;
};

}  // namespace schedhot
