#include "cli/model_store.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace strata::cli {
namespace fs = std::filesystem;

std::string models_dir() {
  if (const char* dir = std::getenv("STRATA_MODELS"); dir && *dir) return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) {
    return (fs::path(cache) / "strata" / "models").string();
  }
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / ".cache" / "strata" / "models").string();
}

std::string resolve_model(const std::string& name_or_path) {
  std::error_code ec;
  if (name_or_path.empty() || fs::exists(name_or_path, ec)) return name_or_path;
  // A name has no directory part: "llama-3.2-1b-q4_k_m" or "llama-3.2-1b-q4_k_m.gguf".
  if (name_or_path.find('/') != std::string::npos) return name_or_path;
  const fs::path dir = models_dir();
  for (const fs::path& candidate : {dir / name_or_path, dir / (name_or_path + ".gguf")}) {
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return name_or_path;
}

std::vector<StoredModel> list_models() {
  std::vector<StoredModel> models;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(models_dir(), ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != ".gguf") continue;
    models.push_back({e.path().stem().string(), e.path().string(), e.file_size(ec)});
  }
  std::sort(models.begin(), models.end(),
            [](const StoredModel& a, const StoredModel& b) { return a.name < b.name; });
  return models;
}

}  // namespace strata::cli
