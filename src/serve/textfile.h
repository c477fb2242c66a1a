// serve --textfile DIR: the metrics as node_exporter's textfile collector reads them,
// DIR/schedhot.prom replaced whole each interval through sys/output_file's policy.
#pragma once
#include <sys/stat.h>

#include <string>

#include "sys/output_file.h"

namespace schedhot {

/// dir/schedhot.prom as serve last renamed it there: removed at exit only if it is still that
/// file (another user's file or link put there since is left alone).
using TextfileWritten = OwnedFile;

/// Writes text to dir/schedhot.prom through a new temporary file of an unpredictable name
/// (O_EXCL) renamed over it: a reader sees the old file or the new one, never a part, and a
/// link planted at schedhot.prom is replaced, not written through. On failure only that
/// temporary file is removed. Throws std::runtime_error, one line.
void write_textfile(const std::string& dir, const std::string& text, TextfileWritten& written);
/// At exit: dir/schedhot.prom removed if it is still the file serve last put there.
void remove_textfile(const std::string& dir, const TextfileWritten& written);
/// Checks --textfile DIR at start-up: a writable directory (else UsageError, one line), by
/// the output-file policy as a whole, DIR included (no directory or link on the way that
/// another user planted or could replace, so DIR names this directory for the whole run;
/// else std::runtime_error, one line), and warns once on stderr when others may write to it
/// without the sticky bit, or it is another user's (they could replace schedhot.prom).
void check_textfile_dir(const std::string& dir);

}  // namespace schedhot
