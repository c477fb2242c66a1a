// JSON text that never throws on bad bytes, and JSON read from a file with its depth bounded.
#pragma once
#include <cstdint>
#include <stdexcept>
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
/// CR, LF...), DEL, the C1 controls U+0080..U+009F and the bidirectional controls
/// (U+200E/F marks, U+202A..U+202E embeddings and overrides, U+2066..U+2069 isolates), which
/// reorder the rest of a line in a terminal; and every byte that is not part of valid UTF-8
/// (a Latin-1 name, a damaged file's bytes), so the result is always valid UTF-8.
inline std::string scrub_controls(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const size_t n = s.size();
  auto at = [&](size_t k) { return k < n ? static_cast<unsigned char>(s[k]) : 0u; };
  for (size_t i = 0; i < n;) {
    const unsigned c = at(i);
    if (c < 0x80) {
      out += (c < 0x20 || c == 0x7f) ? '?' : s[i];
      ++i;
      continue;
    }
    // The length and the first continuation byte's range (no overlong forms, surrogates
    // or code points above U+10FFFF), as in the Unicode standard's table 3-7.
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    bool ok = len > 0 && at(i + 1) >= lo && at(i + 1) <= hi;
    for (size_t k = 2; ok && k < len; ++k) ok = at(i + k) >= 0x80 && at(i + k) <= 0xbf;
    if (!ok) {
      out += '?';
      ++i;
      continue;
    }
    uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (at(i + k) & 0x3f);
    const bool control = cp <= 0x9f || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
                         (cp >= 0x2066 && cp <= 0x2069);
    if (control) out += '?';
    else out.append(s, i, len);
    i += len;
  }
  return out;
}

/// Deepest nesting of arrays and objects accepted in JSON read from a file. A recording's
/// META nests fewer than 10 levels, a NOTE fewer than 5; the bound keeps a crafted
/// document (`[` x 40000) from overflowing the stack in the recursive code that walks it.
inline constexpr int kMaxJsonDepth = 64;

/// JSON nested deeper than kMaxJsonDepth.
struct JsonTooDeep : std::runtime_error {
  JsonTooDeep() : std::runtime_error("JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels") {}
};

/// The same for every string of j, keys included. Used on JSON read from a recording,
/// which may have been crafted. Recursive: throws JsonTooDeep below kMaxJsonDepth levels
/// (depth: of j itself) rather than exhausting the stack.
inline void scrub_controls(nlohmann::json& j, int depth = 0) {
  if (j.is_string()) {
    j = scrub_controls(j.get<std::string>());
  } else if (j.is_array()) {
    if (depth >= kMaxJsonDepth) throw JsonTooDeep();
    for (auto& v : j) scrub_controls(v, depth + 1);
  } else if (j.is_object()) {
    if (depth >= kMaxJsonDepth) throw JsonTooDeep();
    nlohmann::json o = nlohmann::json::object();
    for (auto& [k, v] : j.items()) {
      scrub_controls(v, depth + 1);
      o[scrub_controls(k)] = std::move(v);
    }
    j = std::move(o);
  }
}

/// Parses JSON read from a file (a recording's META and NOTE frames), every string
/// scrubbed (scrub_controls). Throws JsonTooDeep when arrays and objects nest more than
/// kMaxJsonDepth levels (found while parsing, through nlohmann's parser callback, before
/// anything recursive sees the document), nlohmann::json::parse_error on bad syntax.
inline nlohmann::json parse_file_json(const std::string& text) {
  using E = nlohmann::json::parse_event_t;
  nlohmann::json j = nlohmann::json::parse(text, [](int depth, E event, nlohmann::json&) {
    if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth) throw JsonTooDeep();
    return true;
  });
  scrub_controls(j);  // a crafted file's strings never reach a terminal as escapes
  return j;
}

}  // namespace schedhot
