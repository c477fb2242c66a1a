// The output formats of the documents schedhot prints (report, info, probes, diff,
// report --fleet): one registry. A document is a JSON tree whose "schema" names its kind
// ("schedhot.report/1"); a format renders every document (json) or one kind's (its text,
// fleet's csv, diff's markdown and patch). The commands' --format choices, their --help,
// the man page and the completions are read from this table, so a new format is its
// renderer and one line in output/format.cpp, or, for a document of its own (a command's in
// src/command/<name>.cpp), a RegisterOutputFormat next to its renderer. (export's interval
// stream has its own sinks: output/export.h.)
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/schema.h"

namespace schedhot {


/// One output format of one kind of document (or of every kind).
struct OutputFormat {
  const char* name;    ///< what --format takes: "text", "json", "csv", "markdown", "patch"
  const char* schema;  ///< the document kind it renders (schema::*); nullptr: every kind
  const char* help;    ///< a few words for --help: "JSON (schema named in the document)"
  /// The document as stdout text (ends with a newline). Throws what its renderer throws
  /// on a malformed document (nlohmann::json::exception, std::runtime_error).
  std::string (*render)(const nlohmann::json& doc);
};

/// The registry, in the order --help lists the formats: each kind's own first (the table in
/// output/format.cpp, then the ones registered), then the generic ones.
const std::vector<OutputFormat>& output_formats();

/// Adds f to the registry at static initialisation: a namespace-scope object next to f's
/// renderer, so a new document's formats need no line in output/format.cpp (its schema
/// may be a constant of its own file rather than of analysis/schema.h). A kind's format goes
/// before the generic ones (json), a generic one last. The file must be linked whole: a
/// command's src/command/<name>.cpp is (CMakeLists.txt's schedhot_command).
struct RegisterOutputFormat {
  explicit RegisterOutputFormat(const OutputFormat& f);
};

/// The format names a document of `schema` can be printed in, in registry order
/// ("text" first for every kind that has one).
std::vector<std::string> format_names(std::string_view schema);

/// "text (default), json, markdown or patch": format_names() for --help.
std::string format_choices_text(std::string_view schema);

/// doc rendered in `format` (its "schema" picks the kind's renderers). Throws
/// std::invalid_argument "--format 'X': one of text, json" when the kind has no such
/// format.
std::string render_document(const nlohmann::json& doc, std::string_view format);

}  // namespace schedhot
