// The shoal binary as a user runs it: --version, help, bad subcommands and bad flags.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct Run {
  int exit_code;
  std::string output;  // stdout and stderr together
};

Run run_shoal(const std::string& args) {
  const std::string cmd = std::string(SHOAL_BINARY) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST_CASE("--version names the version, the git revision and every backend") {
  const Run r = run_shoal("--version");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("shoal 0.") == 0);
  CHECK(r.output.find("\ngit ") != std::string::npos);
  CHECK(r.output.find(std::string("\ngloo ") + (SHOAL_EXPECT_GLOO ? "yes" : "no")) != std::string::npos);
  CHECK(r.output.find("\nnccl ") != std::string::npos);
  CHECK(r.output.find("\nsystemd ") != std::string::npos);
#if SHOAL_EXPECT_NCCL
  CHECK(r.output.find("\nnccl 2.") != std::string::npos);
#else
  CHECK(r.output.find("\nnccl no") != std::string::npos);
#endif
  CHECK(run_shoal("version").output == r.output);
}

TEST_CASE("help lists the subcommands and each subcommand has its own help") {
  const Run top = run_shoal("--help");
  CHECK(top.exit_code == 0);
  CHECK(top.output.find("demo") != std::string::npos);
  CHECK(top.output.find("version") != std::string::npos);
  const Run demo = run_shoal("demo --help");
  CHECK(demo.exit_code == 0);
  CHECK(demo.output.find("usage: shoal demo") != std::string::npos);
  CHECK(demo.output.find("--hosts N") != std::string::npos);
  CHECK(run_shoal("help demo").output == demo.output);
  const Run ckpt = run_shoal("ckpt --help");
  CHECK(ckpt.exit_code == 0);
  CHECK(ckpt.output.find("ls") != std::string::npos);
}

TEST_CASE("an unknown subcommand or flag exits 2 with a message that names it") {
  const Run sub = run_shoal("frobnicate");
  CHECK(sub.exit_code == 2);
  CHECK(sub.output.find("frobnicate") != std::string::npos);
  const Run flag = run_shoal("demo --bogus");
  CHECK(flag.exit_code == 2);
  CHECK(flag.output.find("--bogus") != std::string::npos);
  const Run none = run_shoal("");
  CHECK(none.exit_code == 2);
  const Run global = run_shoal("--bogus version");
  CHECK(global.exit_code == 2);
  CHECK(global.output.find("unknown flag '--bogus'") != std::string::npos);
}

TEST_CASE("a bad SHOAL_LOG is an error that names the variable, --log-level overrides it") {
  const Run bad = run_shoal("--log-level=shouty version");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("shouty") != std::string::npos);
  const Run env = run_shoal("version; SHOAL_LOG=shouty " + std::string(SHOAL_BINARY) + " version");
  CHECK(env.exit_code == 2);
  CHECK(env.output.find("SHOAL_LOG") != std::string::npos);
}

TEST_CASE("--log-level also works after the subcommand, and is checked there too") {
  const Run after = run_shoal("version --log-level warn");
  CHECK(after.exit_code == 0);
  CHECK(after.output.find("shoal 0.") == 0);
  const Run bad = run_shoal("version --log-level=shouty");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("shouty") != std::string::npos);
  const Run missing = run_shoal("version --log-level");
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("--log-level") != std::string::npos);
  CHECK(missing.output.find("missing") != std::string::npos);
}

TEST_CASE("demo forms a view on loopback, survives a crash, readmits the restarted host and says ok") {
  const Run r = run_shoal("demo --hosts 3");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("shoal 0.") == 0);
  CHECK(r.output.find("view epoch 1 committed at every host: 3 members") != std::string::npos);
  CHECK(r.output.find("every survivor sees host1 dead") != std::string::npos);
  CHECK(r.output.find("view epoch 2 committed at every survivor: 2 members") != std::string::npos);
  CHECK(r.output.find("demo: ok") != std::string::npos);
}
