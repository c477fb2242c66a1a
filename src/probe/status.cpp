#include "probe/status.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sys/json_text.h"

namespace schedhot {

std::string errno_name(int err) {
  switch (err) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case E2BIG: return "E2BIG";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case ENOSPC: return "ENOSPC";
    case ENOSYS: return "ENOSYS";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case 524: return "ENOTSUPP";
    case ESPIPE: return "ESPIPE";
    case ENOEXEC: return "ENOEXEC";
    case ENODATA: return "ENODATA";
    case EPROTO: return "EPROTO";
    default: return fmt::format("errno {}", err);
  }
}

std::string describe_attach_error(Backend b, int err, const std::string& what) {
  const std::string name = errno_name(err);
  switch (b) {
    case Backend::fentry:
      if (err == EPERM || err == EACCES)
        return fmt::format("fentry refused: {} (kernel lockdown or an LSM denies BPF tracing programs)", name);
      if (err == ENOENT || err == ESRCH) return fmt::format("fentry: no BTF function {} ({})", what, name);
      if (err == 524 || err == EOPNOTSUPP)
        return fmt::format("fentry not supported by this kernel for {} ({}: no BPF trampoline)", what, name);
      if (err == EBUSY) return fmt::format("fentry on {} refused: {} (too many trampolines on it)", what, name);
      return fmt::format("fentry on {} failed: {} ({})", what, name, strerror(err));
    case Backend::kprobe:
      if (err == ENOENT)
        return fmt::format("kprobe: {} cannot be probed ({}: not a probeable function here)", what, name);
      if (err == EINVAL || err == EILSEQ)
        return fmt::format("kprobe: {} cannot be probed ({}: notrace or kprobe blacklist)", what, name);
      if (err == EPERM || err == EACCES)
        return fmt::format("kprobe refused: {} (lockdown, or CAP_PERFMON missing)", name);
      if (err == EOPNOTSUPP || err == ENODEV) return fmt::format("kprobes unusable here ({})", name);
      return fmt::format("kprobe on {} failed: {} ({})", what, name, strerror(err));
    case Backend::tracepoint:
      if (err == ENOENT || err == ESRCH) return fmt::format("tracepoint {} not in this kernel ({})", what, name);
      if (err == EPERM || err == EACCES)
        return fmt::format("tracepoint program refused: {} (lockdown, LSM, or CAP_BPF/CAP_PERFMON missing)", name);
      return fmt::format("tracepoint {} failed: {} ({})", what, name, strerror(err));
    case Backend::none: break;
  }
  return fmt::format("{}: {} ({})", what, name, strerror(err));
}

std::string ProbeStatus::backend_label() const {
  if (!attached) return "unavailable";
  if (proxy) return proxy_label;
  return to_string(backend);
}

std::string ProbeStatus::summary() const {
  if (!attached) return "unavailable: " + reason;
  std::string s = "attached (" + backend_label() + (symbol.empty() ? "" : " " + symbol) + ")";
  if (!via.empty()) s += " " + via;
  return s;
}

Backend backend_from_string(const std::string& s) {
  if (s == "fentry") return Backend::fentry;
  if (s == "kprobe") return Backend::kprobe;
  if (s == "tracepoint") return Backend::tracepoint;
  return Backend::none;
}

void to_json(nlohmann::json& j, const ProbeStatus& s) {
  nlohmann::json tried = nlohmann::json::array();
  for (auto& t : s.tried) tried.push_back({{"backend", to_string(t.backend)}, {"symbol", t.symbol}, {"error", t.error}});
  nlohmann::json sites = nlohmann::json::array();
  for (auto& t : s.sites)
    sites.push_back({{"site", t.site}, {"symbol", t.symbol}, {"backend", to_string(t.backend)},
                     {"attached", t.attached}, {"error", t.error}});
  nlohmann::json copies = nlohmann::json::array();
  for (auto& c : s.copies)
    copies.push_back({{"symbol", c.symbol}, {"address", c.addr ? fmt::format("{:#x}", c.addr) : ""},
                      {"backend", to_string(c.backend)}, {"attached", c.attached}, {"error", c.error}});
  nlohmann::json amb = nlohmann::json::array();
  for (auto& a : s.ambiguous) {
    nlohmann::json addrs = nlohmann::json::array();
    for (uint64_t x : a.addrs) addrs.push_back(fmt::format("{:#x}", x));
    amb.push_back({{"name", a.name}, {"addresses", addrs}, {"table", a.table}});
  }
  j = {{"probe", s.probe},     {"target", s.target},           {"attached", s.attached},
       {"backend", to_string(s.backend)}, {"symbol", s.symbol}, {"via", s.via},
       {"proxy", s.proxy},     {"proxy_label", s.proxy_label}, {"proxy_error", s.proxy_error},
       {"reason", s.reason},   {"tried", tried},               {"sites", sites},
       {"notes", s.notes},     {"copies", copies},             {"ambiguous", amb}};
}

void from_json(const nlohmann::json& j, ProbeStatus& s) {
  // Every key through sys/json_text.h's json_value, named with its place on error
  // ("tried[1].backend: expected a string, found a number").
  s.probe = json_value(j, "probe", "");
  s.target = json_value(j, "target", "");
  s.attached = json_value(j, "attached", false);
  s.backend = backend_from_string(json_value(j, "backend", "none"));
  s.symbol = json_value(j, "symbol", "");
  s.via = json_value(j, "via", "");
  s.proxy = json_value(j, "proxy", false);
  s.proxy_label = json_value(j, "proxy_label", "");
  s.proxy_error = json_value(j, "proxy_error", "");
  s.reason = json_value(j, "reason", "");
  // each element of an optional array key (sys/json_text.h json_each)
  auto each = [&j](const char* key, auto&& f) {
    if (j.contains(key)) json_each(j, key, f);
  };
  s.tried.clear();
  each("tried", [&](const nlohmann::json& t) {
    s.tried.push_back({backend_from_string(json_value(t, "backend", "none")), json_value(t, "symbol", ""),
                       json_value(t, "error", "")});
  });
  s.sites.clear();
  each("sites", [&](const nlohmann::json& t) {
    s.sites.push_back({json_value(t, "site", ""), json_value(t, "symbol", ""),
                       backend_from_string(json_value(t, "backend", "none")), json_value(t, "attached", false),
                       json_value(t, "error", "")});
  });
  s.notes.clear();
  each("notes", [&](const nlohmann::json& n) { s.notes.push_back(json_get<std::string>(n)); });
  auto hex = [](const std::string& x) -> uint64_t {
    try {
      return x.empty() ? 0 : std::stoull(x, nullptr, 16);
    } catch (const std::exception&) {
      return 0;
    }
  };
  s.copies.clear();
  each("copies", [&](const nlohmann::json& c) {
    s.copies.push_back({json_value(c, "symbol", ""), hex(json_value(c, "address", "")),
                        backend_from_string(json_value(c, "backend", "none")), json_value(c, "attached", false),
                        json_value(c, "error", "")});
  });
  s.ambiguous.clear();
  each("ambiguous", [&](const nlohmann::json& a) {
    AmbiguousSymbol x{json_value(a, "name", ""), {}, json_value(a, "table", "")};
    if (a.contains("addresses") && a["addresses"].is_array())
      for (auto& v : a["addresses"])
        if (v.is_string()) x.addrs.push_back(hex(v.get<std::string>()));
    s.ambiguous.push_back(std::move(x));
  });
}

void summarize_copies(ProbeStatus& st, const std::vector<CopyStatus>& copies, const std::string& what,
                      const std::string& plan_via) {
  bool same_names = false;
  for (size_t i = 0; i < copies.size(); ++i)
    for (size_t k = i + 1; k < copies.size(); ++k) same_names |= copies[i].symbol == copies[k].symbol;
  auto label = [&](const CopyStatus& c) { return same_names ? fmt::format("{} at {:#x}", c.symbol, c.addr) : c.symbol; };
  std::string on, off;
  size_t n_off = 0;
  bool mixed = false;
  const CopyStatus* first_on = nullptr;
  for (auto& c : copies) {
    if (c.attached) {
      on += (on.empty() ? "" : ", ") + label(c);
      if (!first_on) first_on = &c;
      mixed |= c.backend != first_on->backend;
    } else {
      ++n_off;
      off += fmt::format("{}{} ({})", off.empty() ? "" : ", ", label(c), c.error.empty() ? "not tried" : c.error);
    }
  }
  if (!st.proxy) st.via = plan_via;
  if (st.attached && !st.proxy) st.symbol = on;
  if (n_off == 0)
    st.notes.push_back(fmt::format("{}; attached {}{}", what, copies.size() == 2 ? "both" : fmt::format("all {}", copies.size()),
                                   mixed ? " (fentry and kprobe mixed)" : ""));
  else if (on.empty())
    st.notes.push_back(fmt::format("{}; none could be attached{}", what,
                                   st.proxy ? ", the tracepoint proxy stands in for all of them" : ""));
  else
    st.notes.push_back(fmt::format("{}; attached {} only: {} could not be attached; {} calls are missed", what, on, off,
                                   n_off == 1 ? "its" : "their"));
  st.copies = copies;
}

std::string describe_ambiguity(const AmbiguousSymbol& a) {
  std::string list;
  for (uint64_t x : a.addrs) list += fmt::format("{}{:#x}", list.empty() ? "" : ", ", x);
  return fmt::format("ambiguous: {} addresses for {} in {} ({})", a.addrs.size(), a.name, a.table, list);
}

std::string symbol_with_via(const std::string& symbol, const std::string& via) {
  if (via.empty()) return symbol;
  const std::string self = "via " + symbol + " ";
  if (via.rfind(self, 0) == 0) return symbol + " " + via.substr(self.size());
  return symbol + " " + via;
}

std::string attach_text(const std::string& label, const std::string& where) {
  if (where.empty() || label.find(where) != std::string::npos) return label;
  return label.rfind("proxy:", 0) == 0 ? label + " (" + where + ")" : label + " " + where;
}

std::string brief_reason(const std::string& reason) {
  std::string out;
  int depth = 0;
  for (char c : reason) {
    if (c == '(') {
      ++depth;
      continue;
    }
    if (c == ')' && depth > 0) {
      --depth;
      continue;
    }
    if (depth == 0) out += c;
  }
  // "EPERM ; kprobes" -> "EPERM; kprobes", and no trailing blanks.
  std::string tidy;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == ' ' && (i + 1 == out.size() || out[i + 1] == ' ' || out[i + 1] == ';' || out[i + 1] == ',')) continue;
    tidy += out[i];
  }
  return tidy.empty() ? reason : tidy;
}

}  // namespace schedhot

namespace schedhot {

std::string common_failure(const std::vector<ProbeStatus>& statuses) {
  std::vector<const ProbeStatus*> failed;
  for (const ProbeStatus& s : statuses) {
    if (s.attached) return "";
    if (s.reason.empty() || s.reason.rfind("not selected", 0) == 0) continue;
    failed.push_back(&s);
  }
  if (failed.empty()) return "";
  // The first failed probe's error lines, in its order, kept when every other one says them too.
  std::vector<std::string> lines;
  for (const AttachTry& t : failed.front()->tried)
    if (!t.error.empty() && std::find(lines.begin(), lines.end(), t.error) == lines.end()) lines.push_back(t.error);
  if (lines.empty()) lines.push_back(failed.front()->reason);
  std::string out;
  for (const std::string& l : lines) {
    bool everywhere = std::all_of(failed.begin(), failed.end(),
                                  [&](const ProbeStatus* s) { return s->reason.find(l) != std::string::npos; });
    if (everywhere && out.find(l) == std::string::npos) out += (out.empty() ? "" : "; ") + l;
  }
  return out;
}

}  // namespace schedhot
