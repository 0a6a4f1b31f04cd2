// strata chat at a terminal, as a person (or tmux) drives it: a pseudo-terminal sends keys.
// The left arrow moves the cursor inside the line being typed, the up arrow recalls the last
// line, /help and unknown commands are answered by strata (never sent to the model), /save
// writes the conversation, and with a 64-token context ten turns go through, the oldest turns
// dropped to make room.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace strata {
namespace {
namespace fs = std::filesystem;

// strata chat ARGS on a pseudo-terminal, HOME in a temporary folder (its history file).
class Terminal {
 public:
  Terminal(const std::vector<std::string>& args, const fs::path& home) {
    winsize size{};
    size.ws_row = 40;
    size.ws_col = 200;
    pid_ = forkpty(&fd_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      setenv("HOME", home.c_str(), 1);
      unsetenv("XDG_CACHE_HOME");
      setenv("TERM", "xterm", 1);
      std::vector<char*> argv = {const_cast<char*>(STRATA_BIN), const_cast<char*>("chat")};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(STRATA_BIN, argv.data());
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }

  void type(const std::string& keys) {
    ASSERT_EQ(write(fd_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }

  // Reads until the output since the last wait holds `text` (true) or 60 s pass (false).
  bool wait_for(const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (seen_.find(text, from_) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buffer[4096];
      const ssize_t n = read(fd_, buffer, sizeof buffer);
      if (n <= 0) return false;
      seen_.append(buffer, static_cast<size_t>(n));
    }
    from_ = seen_.find(text, from_) + text.size();
    return true;
  }

  // The exit status once the process ends (at most 30 s), or -1. Output read meanwhile is kept.
  int exit_code() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      char buffer[4096];
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        const ssize_t n = read(fd_, buffer, sizeof buffer);
        if (n > 0) {
          seen_.append(buffer, static_cast<size_t>(n));
          continue;
        }
      }
      // The terminal hangs up a moment before the process can be reaped.
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  // Waits for the prompt, then a moment: libedit flushes what was typed before it set the
  // terminal up for the line (TCSAFLUSH), as a person never types that fast.
  bool wait_for_prompt() {
    if (!wait_for("> ")) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return true;
  }

  const std::string& output() const { return seen_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  std::string seen_;
  size_t from_ = 0;
};

class ChatReplTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::path(::testing::TempDir()) / ("strata_chat_" + std::to_string(::getpid()));
    fs::remove_all(home_);
    fs::create_directories(home_);
  }
  void TearDown() override { fs::remove_all(home_); }
  fs::path home_;
};

const char* kStories = "../shared/models/stories260K.gguf";
const std::string kLeft = "\x1b[D", kUp = "\x1b[A";

TEST_F(ChatReplTest, ArrowKeysEditAndRecallAndCommandsStayLocal) {
  Terminal t({"-m", kStories, "-n", "4", "--temp", "0"}, home_);
  ASSERT_TRUE(t.wait_for("/help lists the commands")) << t.output();
  ASSERT_TRUE(t.wait_for_prompt()) << t.output();
  t.type("/help\r");
  ASSERT_TRUE(t.wait_for("/save FILE")) << t.output();
  ASSERT_TRUE(t.wait_for_prompt()) << t.output();
  t.type("/bogus\r");
  ASSERT_TRUE(t.wait_for("unknown command /bogus")) << t.output();
  ASSERT_TRUE(t.wait_for_prompt()) << t.output();
  t.type("abc" + kLeft + "X\r");  // the cursor goes back one: "abXc"
  ASSERT_TRUE(t.wait_for("tokens/s")) << t.output();
  ASSERT_TRUE(t.wait_for_prompt()) << t.output();
  t.type(kUp + "\r");  // the last line entered, again
  ASSERT_TRUE(t.wait_for("tokens/s")) << t.output();
  ASSERT_TRUE(t.wait_for_prompt()) << t.output();
  const fs::path saved = home_ / "conversation.json";
  t.type("/save " + saved.string() + "\r");
  ASSERT_TRUE(t.wait_for("(saved to")) << t.output();
  ASSERT_TRUE(t.wait_for_prompt()) << t.output();
  t.type("/exit\r");
  EXPECT_EQ(t.exit_code(), 0) << t.output();

  std::ifstream in(saved);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::string> user;
  for (const auto& m : j["messages"]) {
    if (m["role"] == "user") user.push_back(m["content"]);
  }
  EXPECT_EQ(user, (std::vector<std::string>{"abXc", "abXc"}));
  std::ifstream history(home_ / ".cache" / "strata" / "chat_history");
  const std::string kept((std::istreambuf_iterator<char>(history)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(kept.find("abXc"), std::string::npos) << kept;
}

TEST_F(ChatReplTest, ASixtyFourTokenContextSurvivesTenTurns) {
  Terminal t({"-m", kStories, "-c", "64", "-n", "8", "--temp", "0"}, home_);
  for (int turn = 0; turn < 10; ++turn) {
    ASSERT_TRUE(t.wait_for_prompt()) << t.output();
    t.type("A dog ran.\r");
    ASSERT_TRUE(t.wait_for("tokens/s")) << "turn " << turn << ":\n" << t.output();
  }
  ASSERT_TRUE(t.wait_for_prompt()) << t.output();
  t.type("/exit\r");
  EXPECT_EQ(t.exit_code(), 0) << t.output();
  EXPECT_NE(t.output().find("old messages dropped to fit the context"), std::string::npos);
  EXPECT_EQ(t.output().find("error:"), std::string::npos) << t.output();
}

}  // namespace
}  // namespace strata
