// strata pull / list / -m NAME against a local HTTP server (cpp-httplib, in process): a file
// from hf:// (HF_ENDPOINT pointing here) is downloaded and checked against the server's
// X-Linked-ETag, a connection cut halfway is resumed from the bytes already on disk (the second
// request asks for Range: bytes=HALF-), a wrong checksum or a 404 is refused with one error
// line and leaves no model behind, and the pulled name runs as -m NAME and shows in strata list.
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata {
namespace {
namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", digest[i]);
    hex += b;
  }
  return hex;
}

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

class PullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = read_all("../shared/models/stories260K.gguf");
    ASSERT_GT(model_.size(), 1000u);
    dir_ = fs::path(::testing::TempDir()) / ("strata_pull_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const std::string sha = sha256_hex(model_);
    server_.Get("/org/repo/resolve/main/stories.gguf",
                [this, sha](const httplib::Request& req, httplib::Response& res) {
                  record(req);
                  res.set_header("X-Linked-ETag", "\"" + sha + "\"");
                  res.set_content(model_, "application/octet-stream");  // Range: httplib's
                });
    server_.Get("/org/repo/resolve/main/bad.gguf",
                [this](const httplib::Request& req, httplib::Response& res) {
                  record(req);
                  res.set_header("X-Linked-ETag", "\"" + std::string(64, 'a') + "\"");
                  res.set_content(model_, "application/octet-stream");
                });
    // The first request stops after half the file; later ones are served whole or by range.
    server_.Get("/files/cut.gguf", [this](const httplib::Request& req, httplib::Response& res) {
      record(req);
      if (cut_requests_++ > 0) return res.set_content(model_, "application/octet-stream");
      res.set_content_provider(model_.size(), "application/octet-stream",
                               [this](size_t offset, size_t, httplib::DataSink& sink) {
                                 const size_t half = model_.size() / 2;
                                 if (offset >= half) return false;  // cut the connection
                                 sink.write(model_.data() + offset, half - offset);
                                 return true;
                               });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket listens from bind_to_any_port on: early connections wait in its backlog.
    for (int i = 0; i < 100 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void TearDown() override {
    server_.stop();
    thread_.join();
    fs::remove_all(dir_);
  }

  void record(const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mu_);
    ranges_.push_back(req.get_header_value("Range"));
  }

  // strata ARGS with the models folder and the hub endpoint pointed here, at most 60 s.
  Outcome strata(const std::string& args) {
    const std::string out_path = (dir_ / "stdout").string(), err_path = (dir_ / "stderr").string();
    const std::string command = "STRATA_MODELS='" + models().string() +
                                "' HF_ENDPOINT=http://127.0.0.1:" + std::to_string(port_) +
                                " timeout 60 " + STRATA_BIN + " " + args + " </dev/null >" +
                                out_path + " 2>" + err_path;
    const int status = std::system(command.c_str());
    Outcome o;
    if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
    o.out = read_all(out_path);
    o.err = read_all(err_path);
    return o;
  }

  fs::path models() const { return dir_ / "models"; }
  std::vector<std::string> ranges() {
    std::lock_guard<std::mutex> lock(mu_);
    return ranges_;
  }

  std::string model_;
  fs::path dir_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> cut_requests_{0};
  std::mutex mu_;
  std::vector<std::string> ranges_;
};

TEST_F(PullTest, PullsFromTheHubChecksItAndRunsItByName) {
  const Outcome pulled = strata("pull hf://org/repo/stories.gguf");
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_NE(pulled.err.find("SHA-256 checked"), std::string::npos) << pulled.err;
  EXPECT_EQ(read_all((models() / "stories.gguf").string()), model_);
  EXPECT_FALSE(fs::exists(models() / "stories.gguf.part"));

  const Outcome listed = strata("list");
  ASSERT_EQ(listed.exit_code, 0);
  EXPECT_EQ(listed.out.rfind("stories ", 0), 0u) << listed.out;

  // -m NAME: the pulled file, in a command that loads the model.
  const Outcome ran = strata("run -m stories -p 'Once upon a time' -n 4 --temp 0");
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_FALSE(ran.out.empty());

  // Pulled already: nothing is downloaded again.
  const size_t requests = ranges().size();
  EXPECT_EQ(strata("pull hf://org/repo/stories.gguf").exit_code, 0);
  EXPECT_EQ(ranges().size(), requests);
}

TEST_F(PullTest, ACutConnectionResumesWhereItStopped) {
  const Outcome first =
      strata("pull http://127.0.0.1:" + std::to_string(port_) + "/files/cut.gguf --name cut");
  EXPECT_EQ(first.exit_code, 2) << first.err;
  EXPECT_NE(first.err.find("run the same command again to resume"), std::string::npos) << first.err;
  const fs::path part = models() / "cut.gguf.part";
  ASSERT_TRUE(fs::exists(part));
  const size_t have = fs::file_size(part);
  EXPECT_EQ(have, model_.size() / 2);

  const Outcome second = strata("pull http://127.0.0.1:" + std::to_string(port_) +
                                "/files/cut.gguf --name cut --sha256 " + sha256_hex(model_));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("resuming"), std::string::npos) << second.err;
  EXPECT_EQ(ranges().back(), "bytes=" + std::to_string(have) + "-");
  EXPECT_EQ(read_all((models() / "cut.gguf").string()), model_);
}

TEST_F(PullTest, AWrongChecksumOrAMissingFileIsRefusedAndLeavesNothing) {
  const Outcome bad = strata("pull hf://org/repo/bad.gguf");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err.rfind("error: SHA-256 mismatch", 0), 0u) << bad.err;
  EXPECT_FALSE(fs::exists(models() / "bad.gguf"));
  EXPECT_FALSE(fs::exists(models() / "bad.gguf.part"));

  const Outcome missing = strata("pull hf://org/repo/missing.gguf");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("HTTP 404"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(models() / "missing.gguf"));

  const Outcome not_hub = strata("pull org/repo/file.gguf");
  EXPECT_EQ(not_hub.exit_code, 2);
  EXPECT_NE(not_hub.err.find("hf://OWNER/REPO/FILE.gguf"), std::string::npos) << not_hub.err;
}

}  // namespace
}  // namespace strata
