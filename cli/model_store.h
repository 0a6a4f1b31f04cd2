// The models folder: where `strata pull` puts files and where `-m NAME` finds them.
// $STRATA_MODELS, else $XDG_CACHE_HOME/strata/models, else ~/.cache/strata/models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/result.h"

namespace strata::cli {

std::string models_dir();

// What -m names: an existing path as it is; otherwise NAME or NAME.gguf in the models folder
// when there is one; otherwise the text unchanged (the loader then reports the missing file).
std::string resolve_model(const std::string& name_or_path);

struct StoredModel {
  std::string name;  // file name without .gguf
  std::string path;
  uint64_t bytes = 0;
};

// The .gguf files of the models folder, by name (an absent folder holds none).
std::vector<StoredModel> list_models();

}  // namespace strata::cli
