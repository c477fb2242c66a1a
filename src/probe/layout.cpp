#include "probe/layout.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sys/json_text.h"

namespace schedhot {

namespace {

bool valid_line_bytes(int n) { return n >= 16 && n <= 4096 && (n & (n - 1)) == 0; }

}  // namespace

int64_t line_of(int64_t offset, int line_bytes) {
  if (line_bytes <= 0) throw std::invalid_argument("line_of: line size must be positive");
  const int64_t q = offset / line_bytes;
  return (offset % line_bytes != 0 && offset < 0) ? q - 1 : q;
}

CoherenceLayout read_coherence_layout(const struct btf* btf, const SymbolTable* syms, int line_bytes,
                                      const std::string& btf_source, const std::string& syms_source) {
  if (!valid_line_bytes(line_bytes))
    throw std::invalid_argument(fmt::format("cacheline size {} is not a power of two in 16..4096", line_bytes));
  CoherenceLayout l;
  l.line_bytes = line_bytes;
  l.btf_source = btf_source;
  const ReadInputs in{btf, syms, line_bytes, btf_source.empty() ? "BTF" : btf_source,
                      syms_source.empty() ? "the symbol table" : syms_source};
  l.notes.push_back(fmt::format("cacheline size {} B", line_bytes));
  for (const HotObject* o : hot_objects()) o->read(in, l);
  return l;
}

CoherenceLayout read_coherence_layout_from(const std::string& btf_path, const SymbolTable* syms, int line_bytes,
                                           const std::string& syms_source) {
  libbpf_print_fn_t old = libbpf_set_print(nullptr);
  struct btf* btf = btf_path.empty() ? btf__load_vmlinux_btf() : btf__parse(btf_path.c_str(), nullptr);
  const int e = errno;
  libbpf_set_print(old);
  const std::string src = btf_path.empty() ? "vmlinux BTF (libbpf search)" : btf_path;
  CoherenceLayout l;
  try {
    l = read_coherence_layout(btf, syms, line_bytes, btf ? src : "", syms_source);
  } catch (...) {
    btf__free(btf);
    throw;
  }
  btf__free(btf);
  if (!btf) l.notes.insert(l.notes.begin(), fmt::format("{}: no BTF read ({})", src, strerror(e)));
  return l;
}

// ---- modeled lines, fixes, sources, the assumed layout ----------------------------------

std::vector<LineDef> modeled_lines(const CoherenceLayout& layout) {
  std::vector<LineDef> out;
  for (const HotObject* o : hot_objects()) o->lines(layout, out);
  return out;
}

std::optional<bool> FixesPresent::present(std::string_view key) const {
  const Fix* f = find(key);
  return f ? f->present : std::nullopt;
}

const Fix* FixesPresent::find(std::string_view key) const {
  for (const Fix& f : fixes)
    if (f.key == key) return &f;
  return nullptr;
}

FixesPresent fixes_present(const CoherenceLayout& l) {
  FixesPresent f;
  for (const HotObject* o : hot_objects()) f.fixes.push_back(o->fix(l));
  return f;
}

FixesPresent fixes_unknown(const std::string& reason) {
  FixesPresent f = fixes_present(CoherenceLayout{});
  for (Fix& x : f.fixes) {
    x.present.reset();
    x.reason = reason;
  }
  return f;
}

namespace {

/// "fixes: " and each fix's subject and state, joined by sep: the long form (to_string) or
/// the short one (short_string).
std::string fixes_line(const FixesPresent& f, bool brief) {
  std::string out = "fixes: ";
  for (size_t i = 0; i < f.fixes.size(); ++i) {
    const Fix& x = f.fixes[i];
    const std::string state = !x.present ? (brief ? std::string("?")
                                                  : fmt::format("unknown ({})", objects::without_unknown(x.reason)))
                              : *x.present ? (brief ? x.short_yes : x.yes)
                                           : (brief ? x.short_no : x.no);
    out += fmt::format("{}{} {}", i ? (brief ? ", " : "; ") : "", brief ? x.short_subject : x.subject, state);
  }
  return out;
}

}  // namespace

std::string to_string(const FixesPresent& f) { return fixes_line(f, false); }

std::string short_string(const FixesPresent& f) { return fixes_line(f, true); }

std::string layout_source_text(const CoherenceLayout& l) {
  std::string out = fmt::format("BTF {}", l.btf_source.empty() ? "none" : l.btf_source);
  for (const HotObject* o : hot_objects())
    if (std::string s = o->source_text(l); !s.empty()) out += "; " + s;
  return out + fmt::format("; cacheline {} B", l.line_bytes);
}

CoherenceLayout assumed_layout(const std::string& kernel_release, int line_bytes) {
  CoherenceLayout L;
  L.line_bytes = line_bytes;
  int major = 0;
  std::sscanf(kernel_release.c_str(), "%d", &major);
  std::string shapes = "CPUMASK_OFFSTACK=y";
  for (const HotObject* o : hot_objects())
    if (std::string s = o->assume(major, L); !s.empty()) shapes += ", " + s;
  L.notes.push_back(fmt::format("layout not recorded: every line is modeled on Debian's {} layout ({})",
                                major < 7 ? "6.1" : "7.3", shapes));
  return L;
}

// ---- JSON --------------------------------------------------------------------------

void to_json(nlohmann::json& j, const CoherenceLayout& l) {
  j = {{"line_bytes", l.line_bytes}, {"btf_source", l.btf_source}, {"notes", l.notes}};
  for (const HotObject* o : hot_objects()) j[std::string(o->name())] = o->to_json(l);
  if (l.learned) {
    const auto& a = *l.learned;
    j["learned"] = {{"source", a.source},         {"rd", a.rd},
                    {"cpus", a.cpus},             {"other_domains", a.other_domains},
                    {"cpu_to_pri", a.cpu_to_pri}, {"cpu_to_pri_bytes", a.cpu_to_pri_bytes},
                    {"masks", a.masks},           {"mask_bytes", a.mask_bytes}};
    if (a.nohz_idle_mask) j["learned"]["nohz_idle_mask"] = a.nohz_idle_mask;
  }
}

void from_json(const nlohmann::json& j, CoherenceLayout& out) {
  using objects::checked;
  try {
    CoherenceLayout l;
    if (!j.is_object()) throw std::runtime_error("coherence layout: not an object");
    l.line_bytes = int(checked(j, "line_bytes", "layout", 16, 4096));
    if (!valid_line_bytes(l.line_bytes))
      throw std::runtime_error(fmt::format("coherence layout: line_bytes {} is not a power of two", l.line_bytes));
    l.btf_source = j.value("btf_source", "");
    for (const HotObject* o : hot_objects()) {
      const std::string name(o->name());
      if (!j.contains(name)) throw JsonShapeError(name, "", true);
      json_reading(name, [&] { o->from_json(j.at(name), l); });  // a wrong key said by its path
    }
    l.notes = j.value("notes", std::vector<std::string>{});
    if (j.contains("learned") && !j.at("learned").is_null()) {
      const auto& aj = j.at("learned");
      if (!aj.is_object()) throw std::runtime_error("coherence layout: learned is not an object");
      LearnedAddresses a;
      a.source = aj.value("source", "");
      a.rd = json_reading("learned", [&] { return json_at<uint64_t>(aj, "rd"); });
      const auto& cj = aj.at("cpus");
      if (!cj.is_array() || cj.size() > 65536) throw std::runtime_error("coherence layout: learned.cpus malformed");
      for (auto& c : cj) {
        const int64_t cpu = json_reading("learned.cpus", [&] { return json_get<int64_t>(c); });
        if (cpu < 0 || cpu >= 65536 || (!a.cpus.empty() && cpu <= a.cpus.back()))
          throw std::runtime_error("coherence layout: learned.cpus not ascending CPU ids in 0..65535");
        a.cpus.push_back(int(cpu));
      }
      a.other_domains = int(checked(aj, "other_domains", "learned", 0, 65536));
      a.cpu_to_pri = json_reading("learned", [&] { return json_at<uint64_t>(aj, "cpu_to_pri"); });
      a.cpu_to_pri_bytes = checked(aj, "cpu_to_pri_bytes", "learned", 0, 4 * 65536);
      a.mask_bytes = checked(aj, "mask_bytes", "learned", 0, 65536 / 8);
      const auto& mj = aj.at("masks");
      if (!mj.is_array()) throw std::runtime_error("coherence layout: learned.masks is not an array");
      if (!mj.empty() && (!l.cpupri || !l.cpupri->mask_is_pointer || mj.size() != size_t(l.cpupri->nr_prios)))
        throw std::runtime_error("coherence layout: learned.masks without OFFSTACK pri_to_cpu[] masks of that count");
      for (auto& m : mj) a.masks.push_back(json_reading("learned.masks", [&] { return json_get<uint64_t>(m); }));
      a.nohz_idle_mask = json_reading("learned", [&] { return json_value(aj, "nohz_idle_mask", uint64_t(0)); });  // 1.3 recordings since 2026-12-04
      if (a.nohz_idle_mask && (!l.nohz || !l.nohz->mask_is_pointer || a.mask_bytes == 0))
        throw std::runtime_error("coherence layout: learned.nohz_idle_mask without an OFFSTACK nohz.idle_cpus_mask of known size");
      if (!l.cpupri && (a.rd || a.cpu_to_pri)) throw std::runtime_error("coherence layout: learned addresses without a cpupri layout");
      if ((a.cpu_to_pri && a.cpu_to_pri_bytes == 0) || (!a.masks.empty() && a.mask_bytes == 0))
        throw std::runtime_error("coherence layout: learned allocation of 0 bytes");
      auto wraps = [](uint64_t addr, int64_t bytes) { return addr && addr + uint64_t(bytes) < addr; };
      if (wraps(a.rd, l.cpupri ? l.cpupri->root_domain_size : 0) || wraps(a.cpu_to_pri, a.cpu_to_pri_bytes))
        throw std::runtime_error("coherence layout: learned address range wraps");
      for (uint64_t m : a.masks)
        if (wraps(m, a.mask_bytes)) throw std::runtime_error("coherence layout: learned address range wraps");
      if (wraps(a.nohz_idle_mask, a.mask_bytes)) throw std::runtime_error("coherence layout: learned address range wraps");
      l.learned = std::move(a);
    }
    out = std::move(l);
  } catch (const nlohmann::json::exception& e) {  // in words, not nlohmann's "[json.exception...]" text
    throw std::runtime_error(fmt::format("coherence layout: {}", json_shape_error(e).what()));
  } catch (const JsonShapeError& e) {  // a key read through json_reading: its path from the layout's root
    throw std::runtime_error(fmt::format("coherence layout: {}", e.what()));
  }
}

}  // namespace schedhot
