#include "probe/kallsyms.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "sys/host.h"

namespace schedhot {

namespace {
bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}
}  // namespace

std::string clone_base(std::string_view name) {
  size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::string(name);
  std::string_view rest = name.substr(dot + 1);
  std::vector<std::string_view> parts;
  while (true) {
    size_t d = rest.find('.');
    parts.push_back(rest.substr(0, d));
    if (d == std::string_view::npos) break;
    rest = rest.substr(d + 1);
  }
  for (size_t i = 0; i < parts.size();) {
    std::string_view p = parts[i];
    if (p == "isra" || p == "constprop" || p == "part" || p == "llvm") {
      if (i + 1 >= parts.size() || !all_digits(parts[i + 1])) return std::string(name);
      i += 2;
    } else if (p == "cold") {
      i += (i + 1 < parts.size() && all_digits(parts[i + 1])) ? 2 : 1;
    } else {
      return std::string(name);
    }
  }
  return std::string(name.substr(0, dot));
}

SymbolTable SymbolTable::parse(std::string_view text) {
  SymbolTable t;
  bool any_nonzero = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    // ADDR TYPE NAME [\t[MODULE]]
    size_t s1 = line.find(' ');
    if (s1 == std::string_view::npos || s1 + 3 > line.size() || line[s1 + 2] != ' ') continue;
    uint64_t addr = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + s1, addr, 16);
    if (ec != std::errc() || p != line.data() + s1) continue;
    Symbol s;
    s.addr = addr;
    s.type = line[s1 + 1];
    std::string_view rest = line.substr(s1 + 3);
    size_t sep = rest.find_first_of("\t ");
    s.name = std::string(rest.substr(0, sep));
    if (sep != std::string_view::npos) {
      std::string_view mod = rest.substr(sep + 1);
      size_t a = mod.find('['), b = mod.find(']');
      if (a != std::string_view::npos && b != std::string_view::npos && b > a) s.module = std::string(mod.substr(a + 1, b - a - 1));
    }
    if (s.name.empty() || s.name.rfind("__pfx_", 0) == 0) continue;
    if (addr) any_nonzero = true;
    t.syms_.push_back(std::move(s));
  }
  t.hidden_ = !t.syms_.empty() && !any_nonzero;
  for (size_t i = 0; i < t.syms_.size(); ++i) {
    const Symbol& s = t.syms_[i];
    t.by_name_.emplace(s.name, i);
    std::string base = clone_base(s.name);
    if (base != s.name) t.by_base_.emplace(base, i);
    if (s.module.empty() && s.is_text() && s.addr) t.text_by_addr_.push_back(i);
  }
  std::sort(t.text_by_addr_.begin(), t.text_by_addr_.end(),
            [&](size_t a, size_t b) { return t.syms_[a].addr < t.syms_[b].addr; });
  return t;
}

std::optional<SymbolTable> SymbolTable::load(const std::string& path, std::string* err) {
  std::string text;
  if (!read_file(path, text)) {
    if (err) *err = fmt::format("cannot read {} (missing, unreadable, not a regular file, or over {} MiB)", path,
                                kMaxReadBytes >> 20);
    return std::nullopt;
  }
  SymbolTable t = parse(text);
  if (t.empty()) {
    if (err) *err = fmt::format("{} holds no symbols (not a kallsyms/System.map file?)", path);
    return std::nullopt;
  }
  return t;
}

bool is_partial_clone(std::string_view name) {
  return clone_base(name) != name && name.find(".part.") != std::string_view::npos;
}

const Symbol* SymbolTable::find(std::string_view name) const {
  auto all = find_all(name);
  return all.empty() ? nullptr : all.front();
}

std::vector<const Symbol*> SymbolTable::find_all(std::string_view name) const {
  // unordered_multimap keeps equal keys together but not in insertion order: sort by index.
  std::vector<size_t> idx;
  auto [a, b] = by_name_.equal_range(std::string(name));
  for (auto it = a; it != b; ++it)
    if (syms_[it->second].module.empty()) idx.push_back(it->second);
  std::sort(idx.begin(), idx.end());
  std::vector<const Symbol*> out;
  for (size_t i : idx) {
    const Symbol& s = syms_[i];
    if (!hidden_ && std::any_of(out.begin(), out.end(), [&](const Symbol* o) { return o->addr == s.addr; })) continue;
    out.push_back(&s);
  }
  return out;
}

std::vector<const Symbol*> SymbolTable::clones(std::string_view name) const {
  std::vector<const Symbol*> out;
  auto [a, b] = by_base_.equal_range(std::string(name));
  for (auto it = a; it != b; ++it) {
    const Symbol& s = syms_[it->second];
    if (s.module.empty() && s.is_text() && s.name.find(".cold") == std::string::npos) out.push_back(&s);
  }
  std::sort(out.begin(), out.end(), [](auto* x, auto* y) { return x->name < y->name; });
  return out;
}

std::vector<const Symbol*> SymbolTable::cold_parts(std::string_view name) const {
  std::vector<const Symbol*> out;
  auto [a, b] = by_base_.equal_range(std::string(name));
  for (auto it = a; it != b; ++it) {
    const Symbol& s = syms_[it->second];
    if (s.module.empty() && s.name.find(".cold") != std::string::npos) out.push_back(&s);
  }
  return out;
}

std::optional<std::pair<const Symbol*, uint64_t>> SymbolTable::symbolize(uint64_t addr) const {
  auto it = std::upper_bound(text_by_addr_.begin(), text_by_addr_.end(), addr,
                             [&](uint64_t v, size_t i) { return v < syms_[i].addr; });
  if (it == text_by_addr_.begin()) return std::nullopt;
  const Symbol& s = syms_[*(it - 1)];
  return std::make_pair(&s, addr - s.addr);
}

std::string SymbolTable::describe(uint64_t addr) const {
  auto r = symbolize(addr);
  if (!r) return fmt::format("{:#x}", addr);
  return fmt::format("{}+{:#x}", r->first->name, r->second);
}

}  // namespace schedhot
