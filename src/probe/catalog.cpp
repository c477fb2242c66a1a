#include "probe/catalog.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "probe/module.h"

namespace schedhot {

const char* to_string(Backend b) {
  switch (b) {
    case Backend::fentry: return "fentry";
    case Backend::kprobe: return "kprobe";
    case Backend::tracepoint: return "tracepoint";
    case Backend::none: return "none";
  }
  return "none";
}

const char* to_string(FieldKind k) {
  switch (k) {
    case FieldKind::counter: return "counter";
    case FieldKind::counter_array: return "counter_array";
    case FieldKind::hist: return "hist";
    case FieldKind::priv: return "private";
  }
  return "counter";
}

const Field* SlotFields::find(std::string_view name) const {
  for (auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

// ---- the module registry ----------------------------------------------------------

namespace {

struct Registration {
  int order;
  ProbeModuleFactory factory;
};

/// The registrations made so far (static initialization of src/probe/modules/*.cpp).
std::vector<Registration>& registrations() {
  static std::vector<Registration> r;
  return r;
}

}  // namespace

ProbeModuleRegistrar::ProbeModuleRegistrar(int order, ProbeModuleFactory factory) {
  registrations().push_back({order, factory});
}

const std::vector<const ProbeModule*>& probe_modules() {
  static const std::vector<const ProbeModule*> m = [] {
    std::vector<Registration> r = registrations();
    std::sort(r.begin(), r.end(), [](const Registration& a, const Registration& b) { return a.order < b.order; });
    if (r.size() != SH_NPROBES)
      throw std::logic_error(fmt::format("{} probe modules registered, SH_NPROBES is {} (src/probe/module.h: SCHEDHOT_PROBE_MODULE)", r.size(), int(SH_NPROBES)));
    std::vector<const ProbeModule*> v;
    for (size_t i = 0; i < r.size(); ++i) {
      const ProbeModule& mod = r[i].factory();
      if (r[i].order != int(i) || int(mod.spec().id) != r[i].order)
        throw std::logic_error(fmt::format("probe module {} registered at {} (spec id {}), expected at {}",
                                           mod.spec().name, r[i].order, int(mod.spec().id), i));
      v.push_back(&mod);
    }
    return v;
  }();
  return m;
}

const ProbeModule* find_module(std::string_view name) {
  for (const ProbeModule* m : probe_modules())
    if (m->spec().name == name) return m;
  return nullptr;
}

void ProbeModule::size_maps(schedhot_bpf* skel, bool kept, uint32_t ncpus) const {
  bpf_map__set_max_entries(slots_map(skel), kept ? ncpus : 1);
}
void ProbeModule::configure(schedhot_bpf*, const KernelFacts&) const {}
bool ProbeModule::check(const KernelFacts&, Plan&, ProbeStatus&, std::vector<AttachTry>&) const { return true; }
void ProbeModule::after_attach(AttachContext&) const {}
std::optional<std::string> ProbeModule::label(const std::string&, uint32_t) const { return std::nullopt; }
std::vector<std::string> ProbeModule::meta_labels() const { return {}; }
std::string ProbeModule::blind_reason(const HostInfo&, const ProbeStatus&) const { return ""; }
void ProbeModule::add_report_section(const WindowTotals&, nlohmann::json&) const {}
std::string ProbeModule::report_section_text(const nlohmann::json&) const { return ""; }
bool ProbeModule::caught_detail_kept(const CaughtRun&) const { return true; }
std::string ProbeModule::caught_detail_text(uint64_t detail, const CaughtRun&) const { return std::to_string(detail); }
void ProbeModule::caught_detail_fields(uint64_t, nlohmann::json&) const {}
std::string ProbeModule::caught_detail_error(uint64_t, uint32_t) const { return ""; }

const std::vector<ProbeSpec>& probe_catalog() {
  static const std::vector<ProbeSpec> c = [] {
    std::vector<ProbeSpec> v;
    for (const ProbeModule* m : probe_modules()) v.push_back(m->spec());
    return v;
  }();
  return c;
}

std::string_view default_hist_probe() {
  for (auto& p : probe_catalog())
    if (p.default_hist) return p.name;
  return "";
}

const ProbeSpec* find_probe(std::string_view name) {
  for (auto& p : probe_catalog())
    if (p.name == name) return &p;
  return nullptr;
}

bool counter_observed(std::string_view name, bool proxy, std::string_view field) {
  const ProbeSpec* spec = proxy ? find_probe(name) : nullptr;
  if (!spec || !spec->proxy) return true;
  const auto& u = spec->proxy->unseen;
  return std::find(u.begin(), u.end(), field) == u.end();
}

}  // namespace schedhot
