// strata info: a model file's metadata and tensor table, without loading the weights.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"

namespace strata::cli {
namespace {

struct InfoFlags {
  std::string model;
  bool json = false;
};

int info(const InfoFlags& f) {
  Result<std::string> text = describe_model_file(f.model, f.json);
  if (!text.ok()) return report(text.error());
  std::fwrite(text->data(), 1, text->size(), stdout);
  return kExitOk;
}

}  // namespace

Command add_info_command(CLI::App& app) {
  auto f = std::make_shared<InfoFlags>();
  CLI::App* sub = app.add_subcommand("info", "show a GGUF file's metadata and tensors");
  sub->add_option("-m,--model", f->model, "GGUF model file, or a pulled model's name")
      ->required()
      ->transform(model_name_resolver());
  sub->add_flag("--json", f->json, "print one JSON object");
  return {sub, [f] { return info(*f); }};
}

}  // namespace strata::cli
