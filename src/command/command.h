// What a command's entry point below src/cli returns, and the shared steps of the
// document commands (build a document, render it in the requested output format).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

}  // namespace schedhot
