// The man page and the shell completions, written from the same CLI11 definitions that
// --help prints (src/cli/main.cpp builds them from the registered commands and calls docgen()),
// so they cannot drift from it.
#pragma once

namespace CLI {
class App;
}

namespace schedhot {

/// `schedhot --docgen man TEMPLATE` (the page: TEMPLATE's prose with @VERSION@, @DATE@,
/// @COMMANDS@ and @PROBES@ filled in; @DATE@ from SOURCE_DATE_EPOCH when set),
/// `schedhot --docgen bash` and `schedhot --docgen zsh` (completion scripts), on stdout.
/// Used by the build (CMakeLists.txt), which sets SCHEDHOT_DOCGEN=1: without it, refused;
/// the template must be a world-readable (or the real non-root user's) regular file, not a
/// symlink. Not listed in --help. args: what follows --docgen.
/// Returns the exit status (2 and one line for bad arguments).
int docgen(const CLI::App& app, int argc, char** args);

}  // namespace schedhot
