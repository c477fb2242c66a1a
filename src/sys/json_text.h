// JSON text that never throws on bad bytes, and JSON read from a file with its depth bounded.
#pragma once
#include <cctype>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

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

/// JSON read from a file (a recording's META or NOTE, state.json) whose shape is not what
/// its reader wants, in plain words and one line: "PATH: PROBLEM" ("host.hostname: expected
/// a string, found a number"), "missing PATH" for a key that is not there, or PROBLEM alone
/// when no path is known. PATH names keys and indices from the document's root as far as
/// the reader knew them ("probes[1].fields[0].kind"). Never nlohmann's "[json.exception...]"
/// text, never the document's bytes.
class JsonShapeError : public std::runtime_error {
 public:
  JsonShapeError(std::string path, std::string problem, bool missing = false)
      : std::runtime_error(text(path, problem, missing)), path_(std::move(path)), problem_(std::move(problem)),
        missing_(missing) {}
  const std::string& path() const { return path_; }
  const std::string& problem() const { return problem_; }
  bool missing() const { return missing_; }
  /// The same error read inside `outer` (a key or "key[i]"): its path prefixed.
  JsonShapeError within(std::string_view outer) const {
    std::string p(outer);
    if (!path_.empty()) p += (path_[0] == '[' || p.empty() ? "" : ".") + path_;
    return JsonShapeError(p, problem_, missing_);
  }

 private:
  static std::string text(const std::string& path, const std::string& problem, bool missing) {
    if (missing) return "missing " + (path.empty() ? std::string("a key") : path);
    return path.empty() ? problem : path + ": " + problem;
  }
  std::string path_, problem_;
  bool missing_;
};

namespace json_words {
/// nlohmann's type name with its article: "a string", "an object", "null".
inline std::string a(std::string_view type) {
  if (type == "null") return "null";
  if (type == "object" || type == "array") return "an " + std::string(type);
  if (type == "string" || type == "number" || type == "boolean" || type == "binary") return "a " + std::string(type);
  return "something else";
}
/// The text after `lead` up to `stop` in m, "" when m does not hold lead.
inline std::string after(const std::string& m, std::string_view lead, std::string_view stop = "") {
  const size_t i = m.find(lead);
  if (i == std::string::npos) return "";
  const size_t b = i + lead.size();
  const size_t e = stop.empty() ? m.size() : m.find(stop, b);
  return m.substr(b, e == std::string::npos ? std::string::npos : e - b);
}
/// A key our code asked for, as nlohmann quotes it: kept when it is a plain identifier.
inline bool plain_key(const std::string& k) {
  if (k.empty() || k.size() > 64) return false;
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}
}  // namespace json_words

/// nlohmann's exception e as a JsonShapeError at path (what was being read, "" when not
/// known): type errors as "expected a string, found a number" (an object wanted for
/// at(), value() and [] on anything else), a key at() did not find as "missing PATH.KEY",
/// a syntax error as "not JSON (a syntax error at byte N)" (nlohmann's text quotes the bytes
/// it read: not echoed), anything else as nlohmann's sentence without its
/// "[json.exception.*]" prefix.
inline JsonShapeError json_shape_error(const nlohmann::json::exception& e, const std::string& path = "") {
  using namespace json_words;
  const std::string m = e.what();
  const std::string tail = after(m, "] ").empty() ? m : after(m, "] ");
  if (const auto* pe = dynamic_cast<const nlohmann::json::parse_error*>(&e))
    return JsonShapeError(path, "not JSON (a syntax error at byte " + std::to_string(pe->byte) + ")");
  if (dynamic_cast<const nlohmann::json::type_error*>(&e)) {
    if (e.id == 302) {  // "type must be string, but is number"
      const std::string want = after(tail, "type must be ", ","), got = after(tail, "but is ");
      return JsonShapeError(path, "expected " + a(want) + ", found " + a(got));
    }
    if (e.id == 304 || e.id == 305 || e.id == 306) {  // at(), operator[], value() on a non-object
      const size_t w = tail.rfind(" with ");
      return JsonShapeError(path, "expected an object, found " + a(w == std::string::npos ? "" : tail.substr(w + 6)));
    }
  }
  if (dynamic_cast<const nlohmann::json::out_of_range*>(&e) && e.id == 406)  // "number overflow parsing '1e999'"
    return JsonShapeError(path, "a number too large for a double");
  if (dynamic_cast<const nlohmann::json::out_of_range*>(&e) && e.id == 403) {  // "key 'hist' not found"
    const std::string k = after(tail, "key '", "'");
    if (plain_key(k)) return JsonShapeError(path.empty() ? k : path + "." + k, "", true);
    return JsonShapeError(path, "", true);
  }
  return JsonShapeError(path, tail);
}

/// f() (reading JSON) with `where` (a key, "key[i]", or a dotted path) named in what it
/// throws: nlohmann's exceptions become a JsonShapeError at where (json_shape_error), and a
/// JsonShapeError from a read nested inside gets where prefixed to its path.
template <class F>
decltype(auto) json_reading(std::string_view where, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const JsonShapeError& e) {
    throw e.within(where);
  } catch (const nlohmann::json::exception& e) {
    throw json_shape_error(e, std::string(where));
  }
}

/// v as T; an integral T only from a whole number T can hold ("expected a whole number
/// from 0 to 4294967295, found -1"), never wrapped, truncated or rounded as nlohmann's get
/// would (4294967300 as 4, 4.9 as 4); a bool T only from a boolean.
template <class T>
T json_get(const nlohmann::json& v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using L = std::numeric_limits<T>;
    const auto range = [] {
      return "expected a whole number from " + std::to_string(L::min()) + " to " + std::to_string(L::max());
    };
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(L::max())) throw JsonShapeError("", range() + ", found " + v.dump());
    } else if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      if (x < static_cast<int64_t>(L::min()) || (x > 0 && static_cast<uint64_t>(x) > static_cast<uint64_t>(L::max())))
        throw JsonShapeError("", range() + ", found " + v.dump());
    } else if (v.is_number()) {
      throw JsonShapeError("", range() + ", found " + v.dump());  // 4.9, 1e+300: not whole
    }
  }
  return v.get<T>();
}

/// j[key] read as T (json_get), the key named on error; dflt when j has no such key
/// (nlohmann's value()). j not an object: a JsonShapeError at "" (the caller's json_reading
/// names j).
template <class T>
T json_value(const nlohmann::json& j, const char* key, const T& dflt) {
  if (!j.is_object()) throw JsonShapeError("", "expected an object, found " + json_words::a(j.type_name()));
  if (!j.contains(key)) return dflt;
  return json_reading(key, [&] { return json_get<T>(j.at(key)); });
}
inline std::string json_value(const nlohmann::json& j, const char* key, const char* dflt) {
  return json_value<std::string>(j, key, std::string(dflt));
}

/// j[key] read as T, the key named on error ("missing KEY" when absent).
template <class T>
T json_at(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) throw JsonShapeError("", "expected an object, found " + json_words::a(j.type_name()));
  if (!j.contains(key)) throw JsonShapeError(key, "", true);
  return json_reading(key, [&] { return json_get<T>(j.at(key)); });
}

/// j[key] when it is an array (the key named otherwise: missing, or "expected an array").
inline const nlohmann::json& json_array(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) throw JsonShapeError("", "expected an object, found " + json_words::a(j.type_name()));
  if (!j.contains(key)) throw JsonShapeError(key, "", true);
  const nlohmann::json& v = j.at(key);
  if (!v.is_array()) throw JsonShapeError(key, "expected an array, found " + json_words::a(v.type_name()));
  return v;
}

/// f(element) for each element of the array j[key], the element's place ("key[i]") named in
/// what a read inside throws (json_reading); a missing key or a non-array as json_array says.
template <class F>
void json_each(const nlohmann::json& j, const char* key, F&& f) {
  const nlohmann::json& v = json_array(j, key);
  for (size_t i = 0; i < v.size(); ++i)
    json_reading(std::string(key) + "[" + std::to_string(i) + "]", [&] { f(v[i]); });
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
