// JSON text that never throws on bad bytes.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace schedhot {

/// j as JSON text (indent < 0: one line). Strings that are not valid UTF-8 (a path with
/// Latin-1 bytes, bytes quoted from a damaged file) are written with U+FFFD in their
/// place instead of throwing nlohmann's type_error 316.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// s with the characters a terminal would act on replaced by '?': C0 controls (ESC, BEL,
/// CR, LF...), DEL and the C1 controls U+0080..U+009F.
inline std::string scrub_controls(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      out += '?';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// The same for every string of j, keys included. Used on JSON read from a recording,
/// which may have been crafted.
inline void scrub_controls(nlohmann::json& j) {
  if (j.is_string()) {
    j = scrub_controls(j.get<std::string>());
  } else if (j.is_array()) {
    for (auto& v : j) scrub_controls(v);
  } else if (j.is_object()) {
    nlohmann::json o = nlohmann::json::object();
    for (auto& [k, v] : j.items()) {
      scrub_controls(v);
      o[scrub_controls(k)] = std::move(v);
    }
    j = std::move(o);
  }
}

}  // namespace schedhot
