#include "command/diff.h"

#include "output/diff_text.h"
#include "sys/json_text.h"

namespace schedhot {

CommandOutput diff_command(const DiffRequest& req) {
  bool significant = false;
  CommandOutput res = document_output([&] { return diff_document(req); }, [&](const nlohmann::json& d) {
    significant = d["significant"].get<bool>();
    switch (req.format) {
      case DiffFormat::json: return json_text(d, 2) + "\n";
      case DiffFormat::markdown: return render_diff_markdown(d);
      case DiffFormat::patch: return render_diff_patch(d);
      case DiffFormat::text: break;
    }
    return render_diff_text(d);
  });
  if (res.status == 0 && significant) res.status = 3;
  return res;
}

}  // namespace schedhot
