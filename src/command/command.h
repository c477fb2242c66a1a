// What a command's entry point below src/cli returns, the shared steps of the document
// commands (build a document, render it in the requested output format), and the registry
// of the document commands that live in one file (src/command/<name>.cpp, no header).
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/coherence.h"

namespace schedhot {

/// What a command run below src/cli produced, for the CLI to print: stdout text,
/// messages for stderr (one line each, without the "schedhot: " prefix) and the exit
/// status (0 success, 1 runtime failure, 2 an option that does not fit the input, 130
/// interrupted). Every command/ entry point returns it.
struct CommandOutput {
  int status = 0;
  std::string out;
  std::vector<std::string> errors;
};

/// A document command's result: build() run (Interrupted: status 130 "interrupted"; any
/// std::exception: status 1 with its one-line message), then render() of the document as
/// stdout. diff_command() and fleet_command() use it.
CommandOutput document_output(const std::function<nlohmann::json()>& build,
                              const std::function<std::string(const nlohmann::json&)>& render);

/// What the CLI hands a registered document command (DocumentCommand): the recordings and
/// the window its options named, parsed. A command whose options do not fit here has its own
/// request in a header of its own (command/report.h, command/diff.h).
struct DocumentRequest {
  std::vector<std::string> files;           ///< the recordings, as given (the CLI checks how many)
  double from_s = -1, to_s = -1;            ///< --from/--to, seconds since the first sample (<0: not given)
  std::string from, to;                     ///< --from/--to as given (for messages)
  XferCost xfer_cost;                       ///< --xfer-cost (the defaults when not given)
  std::string format = "text";              ///< an output format of the command's document (output/format.h)
  const std::atomic<bool>* stop = nullptr;  ///< Ctrl-C: the command ends with status 130
};

/// A document command that registers itself from its own src/command/<name>.cpp (with its
/// document's renderers, output/format.h RegisterOutputFormat): its CLI half,
/// src/cli/cmd_<name>.cpp, finds it by name, so the command needs no header.
struct DocumentCommand {
  const char* name;    ///< the command ("lines")
  const char* schema;  ///< its document's schema ("schedhot.lines/1"): its --format choices
  /// The entry point: req's recordings read, the document built and rendered in req.format;
  /// errors as values (CommandOutput).
  CommandOutput (*run)(const DocumentRequest& req);
};

/// Registers c at static initialisation: a namespace-scope object in its
/// src/command/<name>.cpp (linked whole into schedhot: CMakeLists.txt's schedhot_command).
struct RegisterDocumentCommand {
  explicit RegisterDocumentCommand(const DocumentCommand& c);
};

/// The document command registered as name. Throws std::logic_error when none is (a
/// cli/cmd_<name>.cpp without its command/<name>.cpp linked).
const DocumentCommand& document_command(std::string_view name);

}  // namespace schedhot
