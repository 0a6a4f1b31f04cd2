// strata pull: a GGUF file from the hub (hf://OWNER/REPO/FILE.gguf) or any HTTP(S) URL into the
// models folder (cli/model_store.h), resumable after a cut connection (an HTTP Range request
// from the bytes already in NAME.gguf.part), with a progress bar on a terminal, checked against
// its SHA-256 when --sha256 gives one or the server does (the hub's X-Linked-ETag for LFS
// files). strata list: what the folder holds.
#include <curl/curl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/model_store.h"

namespace strata::cli {
namespace {
namespace fs = std::filesystem;

struct PullFlags {
  std::string source;
  std::string name;
  std::string sha256;
  bool force = false;
};

// hf://OWNER/REPO/PATH[@REVISION] as the hub serves it ($HF_ENDPOINT, as huggingface_hub reads
// it, or https://huggingface.co); http(s) URLs as they are.
Result<std::string> source_url(const std::string& source) {
  if (source.starts_with("http://") || source.starts_with("https://")) return source;
  if (!source.starts_with("hf://")) {
    return make_error(ErrorCode::kInvalidArgument,
                      "'" + source + "' is not hf://OWNER/REPO/FILE.gguf or an http(s) URL");
  }
  std::string rest = source.substr(5), revision = "main";
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    revision = rest.substr(at + 1);
    rest.resize(at);
  }
  const size_t owner_end = rest.find('/');
  const size_t repo_end =
      owner_end == std::string::npos ? owner_end : rest.find('/', owner_end + 1);
  if (repo_end == std::string::npos || repo_end + 1 >= rest.size()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "'" + source + "' names no file: use hf://OWNER/REPO/FILE.gguf");
  }
  const char* endpoint = std::getenv("HF_ENDPOINT");
  std::string base = endpoint && *endpoint ? endpoint : "https://huggingface.co";
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + rest.substr(0, repo_end) + "/resolve/" + revision + "/" +
         rest.substr(repo_end + 1);
}

// The file name a URL ends in, without a query and without .gguf.
std::string default_name(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  std::string file = path.substr(path.rfind('/') + 1);
  if (file.ends_with(".gguf")) file.resize(file.size() - 5);
  return file;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

// One transfer's state, shared with libcurl's callbacks.
struct Transfer {
  std::string part_path;
  uint64_t offset = 0;  // bytes of the .part file this request continues from
  std::ofstream out;
  long status = 0;          // of the last response (redirects reset it)
  std::string linked_etag;  // X-Linked-ETag: the hub's SHA-256 of an LFS file
  uint64_t total = 0;       // of the whole file, when the response says
  uint64_t written = 0;     // by this request
  bool started = false;     // the body began and `out` is open
  std::string failure;      // why a write callback stopped the transfer
  bool show_progress = false;
  std::chrono::steady_clock::time_point begin, last_draw;
};

std::string header_value(const std::string& line, size_t colon) {
  std::string v = line.substr(colon + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '"')) v.erase(v.begin());
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ' || v.back() == '"'))
    v.pop_back();
  return v;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect): forget the last one
    t.status = std::strtol(line.c_str() + line.find(' '), nullptr, 10);
    t.linked_etag.clear();
    t.total = 0;
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string key = line.substr(0, colon);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "x-linked-etag") t.linked_etag = header_value(line, colon);
  // Content-Range: bytes START-END/TOTAL (206); Content-Length: the whole file (200).
  if (key == "content-range") {
    const std::string v = header_value(line, colon);
    if (size_t slash = v.find('/'); slash != std::string::npos) {
      t.total = std::strtoull(v.c_str() + slash + 1, nullptr, 10);
    }
  }
  if (key == "content-length" && t.status == 200) {
    t.total = std::strtoull(header_value(line, colon).c_str(), nullptr, 10);
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  if (!t.started) {
    if (t.status != 200 && t.status != 206) return 0;  // an error page: curl reports the status
    // 200 to a range request: the server sends the whole file, so start the .part over.
    const bool append = t.status == 206 && t.offset > 0;
    if (!append) t.offset = 0;
    t.out.open(t.part_path, append ? std::ios::binary | std::ios::app : std::ios::binary);
    if (!t.out) {
      t.failure = "cannot write " + t.part_path;
      return 0;
    }
    t.started = true;
  }
  t.out.write(data, static_cast<std::streamsize>(size * n));
  if (!t.out) {
    t.failure = "cannot write " + t.part_path + " (disk full?)";
    return 0;
  }
  t.written += size * n;
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& t = *static_cast<Transfer*>(user);
  const auto now = std::chrono::steady_clock::now();
  if (!t.show_progress || !t.started || now - t.last_draw < std::chrono::milliseconds(200))
    return 0;
  t.last_draw = now;
  const double seconds = std::chrono::duration<double>(now - t.begin).count();
  const double rate = seconds > 0 ? static_cast<double>(t.written) / seconds : 0;
  const double done = static_cast<double>(t.offset + t.written);
  if (t.total == 0) {
    std::fprintf(stderr, "\r%s  %s/s   ", human_bytes(done).c_str(), human_bytes(rate).c_str());
    return 0;
  }
  const double share = done / static_cast<double>(t.total);
  const int width = 30, filled = static_cast<int>(share * width);
  const double eta = rate > 0 ? (static_cast<double>(t.total) - done) / rate : 0;
  std::fprintf(stderr, "\r[%s%s] %3.0f%%  %s / %s  %s/s  ETA %.0f s   ",
               std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(),
               100 * share, human_bytes(done).c_str(),
               human_bytes(static_cast<double>(t.total)).c_str(), human_bytes(rate).c_str(), eta);
  return 0;
}

// The SHA-256 of a file, in lowercase hex.
Result<std::string> sha256_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!in || !md || EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1) {
    return make_error(ErrorCode::kInternal, "cannot hash " + path);
  }
  std::string buffer(1 << 20, '\0');
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    EVP_DigestUpdate(md.get(), buffer.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(md.get(), digest, &len);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    char byte[3];
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// One request from the bytes already in the .part file to the end.
Status fetch(const std::string& url, Transfer& t) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return make_error(ErrorCode::kInternal, "libcurl failed to start");
  curl_slist* headers = nullptr;
  if (const char* token = std::getenv("HF_TOKEN"); token && *token) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + std::string(token)).c_str());
  }
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, curl_slist_free_all);
  const std::string range = std::to_string(t.offset) + "-";
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "strata");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (t.offset > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled connection (under 1 KB/s for a minute) fails, and the next pull resumes it.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  t.begin = t.last_draw = std::chrono::steady_clock::now();
  const CURLcode code = curl_easy_perform(c);
  t.out.close();
  if (t.show_progress) std::fprintf(stderr, "\n");
  if (!t.failure.empty()) return make_error(ErrorCode::kInternal, t.failure);
  if (t.status >= 400 || (code == CURLE_WRITE_ERROR && !t.started)) {
    return make_error(
        t.status == 404 || t.status == 401 ? ErrorCode::kNotFound : ErrorCode::kUnavailable,
        "HTTP " + std::to_string(t.status) + " for " + url +
            (t.status == 401 ? " (a gated model? set HF_TOKEN)" : ""));
  }
  if (code != CURLE_OK) {
    return make_error(ErrorCode::kUnavailable,
                      std::string(curl_easy_strerror(code)) + " after " +
                          human_bytes(static_cast<double>(t.offset + t.written)) +
                          "; run the same command again to resume");
  }
  if (t.total != 0 && t.offset + t.written != t.total) {
    return make_error(ErrorCode::kUnavailable,
                      "the connection ended at " + std::to_string(t.offset + t.written) + " of " +
                          std::to_string(t.total) + " bytes; run the same command again to resume");
  }
  return ok_status();
}

// Checks the finished .part (checksum, GGUF magic) and moves it into place.
Status finish(const std::string& part, const std::string& final_path, const std::string& expected) {
  auto refuse = [&](const std::string& why) {
    std::error_code ec;
    fs::remove(part, ec);
    return make_error(ErrorCode::kInvalidFile, why + "; the download was removed");
  };
  if (!expected.empty()) {
    STRATA_ASSIGN_OR_RETURN(const std::string actual, sha256_of(part));
    if (actual != expected) {
      return refuse("SHA-256 mismatch: expected " + expected + ", got " + actual);
    }
  }
  char magic[4] = {};
  std::ifstream(part, std::ios::binary).read(magic, 4);
  if (std::string(magic, 4) != "GGUF") return refuse("the file is not GGUF (no 'GGUF' magic)");
  std::error_code ec;
  fs::rename(part, final_path, ec);
  if (ec) return make_error(ErrorCode::kInternal, "cannot move it to " + final_path);
  return ok_status();
}

int pull(const PullFlags& f) {
  Result<std::string> url = source_url(f.source);
  if (!url.ok()) return report(url.error());
  const std::string name = f.name.empty() ? default_name(*url) : f.name;
  if (name.empty() || name.find('/') != std::string::npos) {
    return report(make_error(ErrorCode::kInvalidArgument, "give the model a name: --name NAME"));
  }
  std::string expected = f.sha256;
  for (char& c : expected) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!expected.empty() && !is_sha256_hex(expected)) {
    return report(make_error(ErrorCode::kInvalidArgument, "--sha256 takes 64 hex digits"));
  }
  const fs::path dir = models_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string final_path = (dir / (name + ".gguf")).string();
  if (fs::exists(final_path, ec) && !f.force) {
    std::fprintf(stderr, "%s is already pulled (%s); --force pulls it again\n", name.c_str(),
                 final_path.c_str());
    return kExitOk;
  }
  Transfer t;
  t.part_path = final_path + ".part";
  t.offset = fs::exists(t.part_path, ec) ? fs::file_size(t.part_path, ec) : 0;
  t.show_progress = isatty(STDERR_FILENO) != 0;
  if (t.offset > 0) {
    std::fprintf(stderr, "resuming %s after %s\n", name.c_str(),
                 human_bytes(static_cast<double>(t.offset)).c_str());
  }
  if (Status got = fetch(*url, t); !got.ok()) return report(got.error());
  // The server's checksum when the flag gave none: the hub's X-Linked-ETag of an LFS file.
  if (expected.empty() && is_sha256_hex(t.linked_etag)) expected = t.linked_etag;
  if (Status done = finish(t.part_path, final_path, expected); !done.ok()) {
    return report(done.error());
  }
  std::fprintf(stderr, "pulled %s (%s%s) to %s\n", name.c_str(),
               human_bytes(static_cast<double>(fs::file_size(final_path, ec))).c_str(),
               expected.empty() ? ", no checksum to check" : ", SHA-256 checked",
               final_path.c_str());
  return kExitOk;
}

int list() {
  const std::vector<StoredModel> models = list_models();
  if (models.empty()) {
    std::fprintf(stderr, "no models in %s (strata pull hf://OWNER/REPO/FILE.gguf)\n",
                 models_dir().c_str());
    return kExitOk;
  }
  for (const StoredModel& m : models) {
    std::printf("%-48s %10s  %s\n", m.name.c_str(),
                human_bytes(static_cast<double>(m.bytes)).c_str(), m.path.c_str());
  }
  return kExitOk;
}

}  // namespace

Command add_pull_command(CLI::App& app) {
  auto f = std::make_shared<PullFlags>();
  CLI::App* sub = app.add_subcommand(
      "pull",
      "download a GGUF model (hf://OWNER/REPO/FILE.gguf or an http(s) URL) into the "
      "models folder ($STRATA_MODELS, else ~/.cache/strata/models), resumably");
  sub->add_option("source", f->source, "hf://OWNER/REPO/FILE.gguf[@REVISION] or a URL")->required();
  sub->add_option("--name", f->name, "name to keep it under (default: the file name)");
  sub->add_option("--sha256", f->sha256,
                  "expected SHA-256 (default: the hub's, when it gives one)");
  sub->add_flag("--force", f->force, "download again even if the name is already pulled");
  return {sub, [f] { return pull(*f); }};
}

Command add_list_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("list", "list the models folder: names -m accepts");
  return {sub, [] { return list(); }};
}

}  // namespace strata::cli
