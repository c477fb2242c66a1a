// The schemas of the documents analysis/ builds: each document's "schema" member, the key
// output/format.h picks its renderers by. Documented in the README per document. (A document
// built by a command of its own file, src/command/<name>.cpp, keeps its schema there.)
#pragma once

namespace schedhot {

/// A document's schema, as its "schema" member says it.
namespace schema {
inline constexpr const char* report = "schedhot.report/1";
inline constexpr const char* info = "schedhot.info/1";
inline constexpr const char* probes = "schedhot.probes/1";
inline constexpr const char* diff = "schedhot.diff/1";
inline constexpr const char* fleet = "schedhot.fleet-report/1";
}  // namespace schema

}  // namespace schedhot
