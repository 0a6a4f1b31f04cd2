#include "cli/llama_aliases.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <string_view>

namespace strata::cli {
namespace {

struct Spelling {
  const char* typed;
  const char* name;
};

// The one table of llama.cpp's multi-letter single-dash names: what each is rewritten to. The
// long names are registered by the commands that have the feature (--parallel, --model-draft,
// --system), by add_ignored_llama_flags, or by none (then refused, with kHints' suggestion).
constexpr Spelling kSpellings[] = {
    {"-ngl", "--n-gpu-layers"}, {"-ngld", "--n-gpu-layers-draft"},
    {"-np", "--parallel"},      {"-cnv", "--conversation"},
    {"-fa", "--flash-attn"},    {"-md", "--model-draft"},
    {"-sys", "--system"},       {"-mg", "--main-gpu"},
    {"-sm", "--split-mode"},    {"-ts", "--tensor-split"},
    {"-dev", "--device"},       {"-nkvo", "--no-kv-offload"},
    {"-co", "--color"},         {"-ctk", "--cache-type-k"},
    {"-ctv", "--cache-type-v"}, {"-hf", "--hf-repo"},
    {"-hfr", "--hf-repo"},      {"-cb", "--cont-batching"},
    {"-ins", "--instruct"},     {"-mu", "--model-url"},
    {"-ub", "--ubatch-size"},
};

// llama.cpp names strata has under another name or not at all: the suggestion when refused.
constexpr Spelling kHints[] = {
    {"--hf-repo", "strata pull hf://OWNER/REPO/FILE.gguf, then -m NAME"},
    {"--model-url", "strata pull URL, then -m NAME"},
    {"--cont-batching", "--parallel: strata serve always batches"},
    {"--ubatch-size", "--batch-tokens"},
};

// Flags that mean nothing on a CPU engine. values: 0 none, 1 one, 2 an optional one.
struct Ignored {
  const char* names;
  int values;
  const char* why;
};
constexpr Ignored kIgnored[] = {
    {"--n-gpu-layers,--gpu-layers", 1, "strata runs on the CPU"},
    {"--n-gpu-layers-draft,--gpu-layers-draft", 1, "strata runs on the CPU"},
    {"--main-gpu", 1, "strata runs on the CPU"},
    {"--split-mode", 1, "strata runs on the CPU"},
    {"--tensor-split", 1, "strata runs on the CPU"},
    {"--device", 1, "strata runs on the CPU"},
    {"--no-kv-offload", 0, "strata runs on the CPU"},
    {"--flash-attn", 2, "strata's CPU attention is always fused (see --attention)"},
    {"--jinja", 0, "strata always renders the model's chat template with its own Jinja engine"},
    {"--color", 2, "strata prints plain text"},
    {"--no-mmap", 0, "strata reads the weights into memory unless --mmap is given"},
};

// "-ngl", "-ctk", "-hf=x": a dash, then two or more letters (and dashes), then maybe "=VALUE".
bool is_multi_letter_short(std::string_view arg) {
  if (arg.size() < 3 || arg[0] != '-' || arg[1] == '-') return false;
  const std::string_view name = arg.substr(1, arg.find('=') - 1);
  if (name.size() < 2) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '-';
  });
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string_view without_dashes(std::string_view s) {
  while (!s.empty() && s[0] == '-') s.remove_prefix(1);
  return s;
}

// Every spelling `sub` accepts: its options' names and the llama.cpp names that reach one.
std::vector<std::string> flag_names(const CLI::App& sub) {
  std::vector<std::string> names;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  for (const Spelling& s : kSpellings) {
    if (std::find(names.begin(), names.end(), s.name) != names.end()) names.push_back(s.typed);
  }
  return names;
}

std::string nearest(std::string_view typed, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& n : names) {
    const size_t d = edit_distance(without_dashes(typed), without_dashes(n));
    if (d < best_distance) {
      best_distance = d;
      best = n;
    }
  }
  return best;
}

std::string unknown_flag_message(const CLI::App& command, const std::string& rewritten,
                                 const std::map<std::string, std::string>& typed) {
  const auto t = typed.find(rewritten);
  const std::string shown = t != typed.end() ? t->second : rewritten;
  std::string suggestion;
  for (const Spelling& h : kHints) {
    if (rewritten == h.typed) suggestion = std::string("try ") + h.name;
  }
  if (suggestion.empty()) suggestion = "nearest: " + nearest(shown, flag_names(command));
  std::string path = command.get_parent() != nullptr ? command.get_name() : "";
  for (const CLI::App* p = command.get_parent(); p != nullptr && p->get_parent() != nullptr;
       p = p->get_parent()) {
    path.insert(0, p->get_name() + " ");
  }
  return "unknown flag " + shown + (path.empty() ? "" : " for " + path) + " (" + suggestion + ")" +
         " (see --help)";
}

}  // namespace

RewrittenArgs rewrite_llama_spellings(int argc, const char* const* argv) {
  RewrittenArgs out;
  bool after_separator = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    // A prompt may be a word like "-hello": the value of a text flag is never rewritten.
    const std::string_view previous = i > 0 ? argv[i - 1] : "";
    const bool text_value = previous == "-p" || previous == "--prompt" || previous == "--system";
    if (i == 0 || after_separator || text_value || !is_multi_letter_short(arg)) {
      after_separator = after_separator || (i > 0 && arg == "--");
      out.args.push_back(std::move(arg));
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq);
    std::string long_name = "-" + name;  // unknown: refused under the name typed
    for (const Spelling& s : kSpellings) {
      if (name == s.typed) long_name = s.name;
    }
    out.typed.emplace(long_name, name);
    out.args.push_back(long_name + value);
  }
  return out;
}

void add_ignored_llama_flags(CLI::App& sub) {
  for (const Ignored& f : kIgnored) {
    // A name the command gives a meaning to (now or later) is not taken over.
    std::string names;
    std::stringstream all(f.names);
    for (std::string name; std::getline(all, name, ',');) {
      if (sub.get_option_no_throw(name) == nullptr) names += (names.empty() ? "" : ",") + name;
    }
    if (names.empty()) continue;
    const std::string first = names.substr(0, names.find(','));
    const std::string why = f.why;
    const bool optional_value = f.values == 2;
    CLI::callback_t warn = [first, why, optional_value](const CLI::results_t& values) {
      // llama.cpp's optional values (-fa on|off|auto): anything else is a typo, not a no-op.
      for (const std::string& v : values) {
        if (optional_value && !v.empty() && v != "true" && v != "on" && v != "off" && v != "auto") {
          throw CLI::ValidationError(first, "'" + v + "' is not on, off or auto");
        }
      }
      std::fprintf(stderr, "warning: %s is ignored: %s\n", first.c_str(), why.c_str());
      return true;
    };
    std::string spelled = "llama.cpp's";
    for (const Spelling& sp : kSpellings) {
      if (first == sp.name) spelled += std::string(" ") + sp.typed;
    }
    std::string help = "ignored (" + spelled;
    help += "; " + why + ")";
    CLI::Option* o = sub.add_option(names, warn, help);
    o->group("llama.cpp flags, ignored");
    if (f.values == 0) o->expected(0);
    if (f.values == 1) o->type_name("VALUE");
    if (f.values == 2) o->expected(0, 1)->type_name("[on|off|auto]");
  }
}

std::string parse_failure_message(const CLI::App& app, const CLI::Error& error,
                                  const std::map<std::string, std::string>& typed) {
  const CLI::App* command = &app;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
  const std::vector<std::string> extras = app.remaining(true);
  // Before any command: `strata rn` or `strata --foo` (CLI11 says only that one is required).
  if (command == &app && !extras.empty()) {
    const std::string& first = extras.front();
    if (first.size() > 1 && first[0] == '-') {
      return unknown_flag_message(app, first.substr(0, first.find('=')), typed);
    }
    std::vector<std::string> names;
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
      names.push_back(s->get_name());
    }
    return "unknown command '" + first + "' (nearest: " + nearest(first, names) + ") (see --help)";
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    for (const std::string& e : extras) {
      if (e.size() > 1 && e[0] == '-') {
        return unknown_flag_message(*command, e.substr(0, e.find('=')), typed);
      }
    }
  }
  // `strata run -m M hello`: a word where none is taken.
  if (command != &app && !extras.empty() &&
      dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    return "unexpected argument '" + extras.front() + "' for " + command->get_name() +
           " (values follow their flags, e.g. -p TEXT) (see --help)";
  }
  std::string message = error.what();
  std::replace(message.begin(), message.end(), '\n', ' ');
  while (!message.empty() && message.back() == ' ') message.pop_back();
  return message + " (see --help)";
}

}  // namespace strata::cli
