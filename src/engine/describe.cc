// `strata info`: describes a GGUF file without loading the model.
#include "gguf/describe.h"

#include "strata/engine.h"

namespace strata {

Result<std::string> describe_model_file(const std::string& path, bool json) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<gguf::File> file,
                          gguf::File::open(path, MappedFile::Mode::kMmap));
  if (json) return gguf::describe_json(*file).dump(2) + "\n";
  return gguf::describe_text(*file);
}

}  // namespace strata
