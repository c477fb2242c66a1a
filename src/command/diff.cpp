#include "command/diff.h"

#include "output/format.h"

namespace schedhot {

CommandOutput diff_command(const DiffRequest& req, const std::string& format) {
  bool significant = false;
  CommandOutput res = document_output([&] { return diff_document(req); }, [&](const nlohmann::json& d) {
    significant = d["significant"].get<bool>();
    return render_document(d, format);
  });
  if (res.status == 0 && significant) res.status = 3;
  return res;
}

}  // namespace schedhot
