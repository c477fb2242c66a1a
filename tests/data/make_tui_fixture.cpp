// Writes the fixed recording of the top/replay UI tests (contents: tui_fixture.h).
//
// usage: schedhot_make_tui_fixture FILE      (refuses to replace an existing FILE)
#include <cstdio>

#include <fmt/format.h>

#include "store/recording.h"
#include "tui_fixture.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: {} FILE\n", argv[0]);
    return 2;
  }
  using namespace schedhot;
  try {
    Meta m = tui_fixture::fixture_meta();
    RecordingWriter w(argv[1], m);
    for (const Sample& s : tui_fixture::fixture_samples(m)) w.write_sample(s);
    w.close();
    fmt::print("wrote {} samples, {} bytes to {}\n", w.samples(), w.bytes(), argv[1]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "make_tui_fixture: {}\n", e.what());
    return 1;
  }
  return 0;
}
