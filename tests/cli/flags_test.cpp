// shoal's flags on CLI11: both spellings of a value, the last of a repeated flag, errors that name the flag
// and what is wrong, the value checks (numbers, seconds, sizes, words), help texts that tell the truth and
// fit the page, and the flags of `shoal agent` becoming its AgentConfig and LaunchConfig.
#include <doctest/doctest.h>

#include <sstream>

#include "ckpt_shm/shm_capacity.hpp"
#include "cli/agent_flags.hpp"
#include "cli/command_line.hpp"
#include "cli/flag_values.hpp"
#include "cli/help_format.hpp"

using namespace shoal::cli;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Fixture {
  std::optional<std::string> name;
  std::optional<int64_t> slots;
  std::optional<double> grace_s;
  std::optional<uint64_t> budget;
  std::optional<std::string> mode;
  bool json = false;
  std::unique_ptr<CLI::App> app = command_app("shoal x", "shoal x [flags]", "A command for tests.");
  Fixture() {
    app->add_option("--name", name, "member name")->type_name("NAME");
    app->add_option("--slots", slots, "GPU slots")->type_name("N")->check(whole_number(0, 64));
    app->add_option("--grace", grace_s, "seconds")->type_name("SECONDS")->transform(seconds(ZeroSeconds::allowed, 60));
    app->add_option("--budget", budget, "bytes")->type_name("BYTES")->transform(byte_size());
    app->add_option("--mode", mode, "restart or connect")->check(one_of({"restart", "connect"}));
    app->add_flag("--json", json, "print JSON");
  }
  shoal::Result<Parsed> parse(const std::vector<std::string>& args) { return parse_args(*app, args); }
  std::string error_of(const std::vector<std::string>& args) {
    auto r = parse(args);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  }
};

}  // namespace

TEST_CASE("flags accept --name VALUE and --name=VALUE, and a repeated flag keeps its last value") {
  Fixture f;
  auto r = f.parse({"--name", "a", "--slots=8", "--json", "--name=b"});
  REQUIRE(r.ok());
  CHECK(*r == Parsed::ok);
  CHECK(*f.name == "b");
  CHECK(*f.slots == 8);
  CHECK(f.json);
}

TEST_CASE("an unknown flag, a missing value, a bad number and a stray argument are errors naming them") {
  Fixture f;
  CHECK(f.error_of({"--nmae", "a"}) == "unknown flag '--nmae'");
  const std::string missing = Fixture().error_of({"--name"});
  CHECK(contains(missing, "--name"));
  CHECK(contains(missing, "missing"));
  CHECK(Fixture().error_of({"--slots", "eight"}) == "--slots: 'eight' is not a whole number");
  CHECK(Fixture().error_of({"--slots", "65"}) == "--slots: 65 is out of range [0, 64]");
  CHECK(Fixture().error_of({"--mode", "sometimes"}) == "--mode: must be restart or connect, not 'sometimes'");
  CHECK(Fixture().error_of({"stray"}) == "unexpected argument 'stray'");
  const std::string switch_value = Fixture().error_of({"--json=maybe"});
  CHECK(contains(switch_value, "--json"));
  CHECK(contains(switch_value, "maybe"));
}

TEST_CASE("durations in seconds: the same range and messages for every flag that takes one") {
  Fixture f;
  REQUIRE(f.parse({"--grace", "2.5"}).ok());
  CHECK(*f.grace_s == 2.5);
  Fixture zero;
  REQUIRE(zero.parse({"--grace", "0"}).ok());
  CHECK(*zero.grace_s == 0.0);
  for (const char* bad : {"-1", "nan", "soon", "", "61", "2.5s", "1e400"}) {
    INFO("value: " << bad);
    CHECK(Fixture().error_of({"--grace", bad}) ==
          std::string("--grace: '") + bad + "' is not a number of seconds from 0 to 60");
  }
  CLI::Validator positive = seconds(ZeroSeconds::refused, 10);
  std::string text = "0";
  CHECK(positive(text) == "'0' is not a positive number of seconds");
  text = "0.25";
  CHECK(positive(text).empty());
  CHECK(text == "0.25");
}

TEST_CASE("sizes take binary suffixes and must be positive") {
  Fixture f;
  REQUIRE(f.parse({"--budget", "512M"}).ok());
  CHECK(*f.budget == 512ull << 20);
  Fixture plain;
  REQUIRE(plain.parse({"--budget=4096"}).ok());
  CHECK(*plain.budget == 4096);
  for (const char* bad : {"0", "12X", "-1", "99999999999T"}) {
    CHECK(contains(Fixture().error_of({"--budget", bad}), "is not a positive size"));
  }
}

TEST_CASE("help lists every flag and is asked for with -h or --help") {
  Fixture f;
  auto r = f.parse({"--help"});
  REQUIRE(r.ok());
  CHECK(*r == Parsed::help);
  const std::string h = f.app->help();
  CHECK(h.rfind("usage: shoal x [flags]\n", 0) == 0);
  for (const char* flag :
       {"--name NAME", "--slots N", "--grace SECONDS", "--budget BYTES", "--json", "--log-level SPEC", "-h,--help"}) {
    CHECK_MESSAGE(contains(h, flag), flag);
  }
  CHECK(*Fixture().parse({"-h"}) == Parsed::help);
}

TEST_CASE("long help is wrapped at spaces, keeping its own line breaks") {
  CHECK(wrap_text("aaa bbb ccc", 7) == "aaa bbb\nccc");
  CHECK(wrap_text("one\ntwo three", 9) == "one\ntwo three");
  CHECK(wrap_text("averyveryverylongword x", 5) == "averyveryverylongword\nx");
  AgentFlags flags;
  const std::string help = agent_app(flags)->help();
  std::istringstream lines(help);
  std::string line;
  while (std::getline(lines, line)) CHECK_MESSAGE(line.size() <= 110, line);
}

TEST_CASE("shoal agent's help tells the truth about --bind and lists every flag") {
  AgentFlags flags;
  auto app = agent_app(flags);
  const std::string help = app->help();
  for (const char* flag : {"--name",
                           "--bind",
                           "--seeds",
                           "--cluster",
                           "--advertise",
                           "--join-timeout",
                           "--slots",
                           "--min-hosts",
                           "--max-hosts",
                           "--hold-down",
                           "--join-window",
                           "--join-window-from",
                           "--quorum-policy",
                           "--job",
                           "--ckpt-replicas",
                           "--ckpt-budget",
                           "--ckpt-dir",
                           "--ckpt-dir-keep",
                           "--ckpt-exit-wait",
                           "--host",
                           "--ckpt-store",
                           "--workers",
                           "--max-restarts",
                           "--master-port",
                           "--run-id",
                           "--role",
                           "--devices",
                           "--local-rank-arg",
                           "--worker-stop-timeout",
                           "--failure-grace",
                           "--control",
                           "--config",
                           "--key-file",
                           "--metrics",
                           "--no-slurm",
                           "--no-kubernetes",
                           "--precheck",
                           "--precheck-factor",
                           "--precheck-wait",
                           "--log-level",
                           "--help"}) {
    CHECK_MESSAGE(contains(help, flag), flag);
  }
  // No flag shows a default of CLI11's next to its help: the defaults are in the words.
  for (const CLI::Option* opt : app->get_options()) CHECK_MESSAGE(opt->get_default_str().empty(), opt->get_name());
  const std::string bind = app->get_option("--bind")->get_description();
  CHECK_FALSE(contains(bind, "(required)"));
  CHECK(contains(bind, "Required, except under Slurm, where it is 0.0.0.0:7946"));
  CHECK(help.rfind("usage: shoal agent [--name NAME] --bind HOST:PORT", 0) == 0);
  CHECK(contains(app->get_option("--name")->get_description(), "host name"));
  CHECK(contains(help, "[-- COMMAND ARGS...]"));
}

TEST_CASE("a list given with spaces instead of commas is told that the list is comma-separated") {
  AgentFlags flags;
  auto app = agent_app(flags);
  const std::vector<std::string> args = {"--seeds", "a:1 b:2"};
  auto r = parse_args(*app, args);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "--seeds: "));
  CHECK(contains(r.error().message, "comma-separated"));
  CHECK_FALSE(contains(r.error().message, "bracket"));
  AgentFlags ok;
  auto app2 = agent_app(ok);
  const std::vector<std::string> good = {"--seeds", "a:1,b:2"};
  REQUIRE(parse_args(*app2, good).ok());
  CHECK(*ok.seeds == "a:1,b:2");
}

TEST_CASE("--log-level is a flag of every command, checked where it is given") {
  Fixture f;
  REQUIRE(f.parse({"--log-level", "warn", "--log-level=info,gossip=debug"}).ok());
  CHECK(log_level_of(*f.app) == std::optional<std::string>("info,gossip=debug"));
  const std::string bad = Fixture().error_of({"--log-level", "shouty"});
  CHECK(contains(bad, "--log-level: "));
  CHECK(contains(bad, "shouty"));
  CHECK_FALSE(log_level_of(*Fixture().app).has_value());
}

TEST_CASE("`--` ends the flags of shoal agent: the rest is the workers' command, untouched") {
  const std::vector<std::string> args = {"--slots", "2", "--", "python3", "train.py", "--slots", "x", "--"};
  const AgentArgs split = split_agent_args(args);
  CHECK(split.flags == std::vector<std::string>{"--slots", "2"});
  CHECK(split.command == std::vector<std::string>{"python3", "train.py", "--slots", "x", "--"});
  const std::vector<std::string> none = {"--slots", "2"};
  CHECK(split_agent_args(none).command.empty());
}

TEST_CASE("the agent's flags make its configuration; checks of several flags name them") {
  const auto config_of = [](const std::vector<std::string>& args) {
    AgentFlags flags;
    auto app = agent_app(flags);
    auto parsed = parse_args(*app, args);
    REQUIRE_MESSAGE(parsed.ok(), parsed.error().message);
    return agent_config(flags, shoal::ops::SlurmDefaults{});
  };
  // With neither a key nor --insecure the agent does not run (the tests below say --insecure).
  {
    auto no_key = config_of({"--name", "a", "--bind", "127.0.0.1:0", "--control", "/tmp/x.sock"});
    REQUIRE_FALSE(no_key.ok());
    CHECK(no_key.error().message.find("no cluster key") != std::string::npos);
    CHECK(no_key.error().message.find("--insecure") != std::string::npos);
  }
  auto cfg = config_of({"--name", "a", "--bind", "127.0.0.1:0", "--hold-down", "2.5", "--ckpt-budget", "1K",
                        "--quorum-policy", "any", "--control", "/tmp/x.sock", "--insecure"});
  REQUIRE(cfg.ok());
  CHECK(cfg->name == "a");
  CHECK(cfg->membership.hold_down == std::chrono::milliseconds(2500));
  CHECK(cfg->ckpt.budget_bytes == 1024);
  CHECK(cfg->membership.policy == shoal::membership::QuorumPolicy::any);
  CHECK(cfg->control_path == "/tmp/x.sock");
  // The join window: 10 s from 32 members unless given; 0 turns it off.
  CHECK(cfg->membership.join_window == std::chrono::seconds(10));
  CHECK(cfg->membership.join_window_from == 32);
  auto window = config_of(
      {"--name", "a", "--bind", "127.0.0.1:0", "--insecure", "--join-window", "0", "--join-window-from", "100"});
  REQUIRE(window.ok());
  CHECK(window->membership.join_window.count() == 0);
  CHECK(window->membership.join_window_from == 100);
  const auto parse_error = [](const std::vector<std::string>& args) {
    AgentFlags flags;
    auto app = agent_app(flags);
    auto parsed = parse_args(*app, args);
    return parsed.ok() ? std::string() : parsed.error().message;
  };
  CHECK(parse_error({"--join-window", "-1"}) == "--join-window: '-1' is not a number of seconds from 0 to 31536000");
  CHECK(parse_error({"--join-window-from", "0"}) == "--join-window-from: 0 is out of range [1, 100000]");
  // Without --ckpt-budget: half of /dev/shm, never unlimited; without --job the job is not named.
  auto plain = config_of({"--name", "a", "--bind", "127.0.0.1:0", "--insecure"});
  REQUIRE(plain.ok());
  CHECK(plain->ckpt.budget_bytes == shoal::ckpt::default_budget_bytes());
  CHECK(plain->ckpt.budget_bytes > 0);
  CHECK_FALSE(plain->ckpt.job_named);
  CHECK(config_of({"--name", "a", "--bind", "127.0.0.1:0", "--insecure", "--job", "j"})->ckpt.job_named);
  // ...so its segments are named after the cluster's lineage too, unless the job or the store is named.
  CHECK(plain->ckpt.store_by_lineage);
  CHECK_FALSE(config_of({"--name", "a", "--bind", "127.0.0.1:0", "--insecure", "--job", "j"})->ckpt.store_by_lineage);
  CHECK_FALSE(
      config_of({"--name", "a", "--bind", "127.0.0.1:0", "--insecure", "--ckpt-store", "s"})->ckpt.store_by_lineage);
  CHECK(config_of({"--bind", "127.0.0.1:0"}).error().message == "--name is required");
  CHECK(config_of({"--name", "a"}).error().message == "--bind is required");
  CHECK(config_of({"--name", "a", "--bind", "127.0.0.1:0", "--min-hosts", "3", "--max-hosts", "2"}).error().message ==
        "--max-hosts is below --min-hosts");
  CHECK(contains(config_of({"--name", "a", "--bind", "127.0.0.1:0", "--ckpt-dir-keep", "3"}).error().message,
                 "need --ckpt-dir"));
  CHECK_FALSE(plain->precheck);
  auto precheck = config_of({"--name", "a", "--bind", "127.0.0.1:0", "--insecure", "--precheck", "--precheck-factor",
                             "2", "--precheck-wait", "12.5"});
  REQUIRE(precheck.ok());
  CHECK(precheck->precheck);
  CHECK(precheck->precheck_options.factor == 2.0);
  CHECK(precheck->precheck_wait == std::chrono::milliseconds(12500));
  CHECK(contains(config_of({"--name", "a", "--bind", "127.0.0.1:0", "--insecure", "--precheck-factor", "2"})
                     .error()
                     .message,
                 "need --precheck"));
  AgentFlags both;  // --key-file's own check (the file parses) runs at parse time; this is the combination
  both.name = "a";
  both.bind = "127.0.0.1:0";
  both.key_file = "/etc/shoal/cluster.key";
  both.insecure = true;
  CHECK(contains(agent_config(both, shoal::ops::SlurmDefaults{}).error().message, "exclude each other"));
}

TEST_CASE("worker flags need a command, and make the workers' configuration with one") {
  AgentFlags flags;
  auto app = agent_app(flags);
  const std::vector<std::string> args = {"--workers", "connect", "--failure-grace", "0.5", "--local-rank-arg"};
  REQUIRE(parse_args(*app, args).ok());
  auto none = launch_config(flags, {}, "job", std::nullopt);
  REQUIRE_FALSE(none.ok());
  CHECK(contains(none.error().message, "need a command after `--`"));
  auto launch = launch_config(flags, {"true"}, "job", std::string("3,5"));
  REQUIRE(launch.ok());
  REQUIRE(launch->has_value());
  const auto& cfg = **launch;
  CHECK(cfg.limits.mode == shoal::launcher::WorkerMode::connect);
  CHECK(cfg.limits.failure_grace == std::chrono::milliseconds(500));
  CHECK(cfg.local_rank_arg);
  CHECK(cfg.torchrun.run_id == "job");
  CHECK(cfg.torchrun.device_ids == std::vector<std::string>{"3", "5"});
  AgentFlags idle;
  CHECK(launch_config(idle, {}, "job", std::nullopt)->has_value() == false);
}


TEST_CASE("without --name the agent is named after the host; --name and Slurm's node name come first") {
  AgentFlags none;
  CHECK(apply_host_name_default(none, "gpu-node-07"));
  CHECK(*none.name == "gpu-node-07");
  AgentFlags given;
  given.name = "a";
  CHECK_FALSE(apply_host_name_default(given, "gpu-node-07"));
  CHECK(*given.name == "a");
  AgentFlags slurm_named;
  shoal::ops::SlurmDefaults slurm;
  slurm.under_slurm = true;
  slurm.name = "node3";
  apply_slurm_defaults(slurm_named, slurm);
  CHECK_FALSE(apply_host_name_default(slurm_named, "gpu-node-07"));
  CHECK(*slurm_named.name == "node3");
  AgentFlags unusable;
  CHECK_FALSE(apply_host_name_default(unusable, ""));
  // A host name that is no member name is refused, saying how to choose another.
  AgentFlags spaced;
  CHECK(apply_host_name_default(spaced, "bad host"));
  spaced.bind = "127.0.0.1:0";
  spaced.insecure = true;
  const auto cfg = agent_config(spaced, shoal::ops::SlurmDefaults{});
  REQUIRE_FALSE(cfg);
  CHECK(contains(cfg.error().message, "give --name"));
}

TEST_CASE("in a pod the downward API's values fill what neither the flags nor Slurm set") {
  shoal::ops::KubernetesDefaults pod;
  pod.under_kubernetes = true;
  pod.name = "train-2-abcde";
  pod.host = "gpu-node-9";
  pod.job = "llama";
  pod.advertise = "10.244.1.7";
  pod.slots = 8;
  AgentFlags bare;
  apply_kubernetes_defaults(bare, pod);
  CHECK(*bare.name == "train-2-abcde");
  CHECK(*bare.bind == "0.0.0.0:7946");
  CHECK(*bare.advertise == "10.244.1.7");
  CHECK(*bare.cluster == "llama");
  CHECK(*bare.job == "llama");
  CHECK(*bare.host == "gpu-node-9");
  CHECK(*bare.slots == 8);
  bare.key_file.reset();
  bare.insecure = true;
  const auto cfg = agent_config(bare, shoal::ops::SlurmDefaults{});
  REQUIRE_MESSAGE(cfg, cfg.error().message);
  CHECK(cfg->name == "train-2-abcde");
  CHECK(cfg->meta.host == "gpu-node-9");
  CHECK(cfg->ckpt.job == "llama");
  CHECK(cfg->ckpt.job_named);
  CHECK(cfg->meta.slots == 8);
  // Flags, and Slurm's defaults applied before, come first.
  AgentFlags given;
  given.name = "mine";
  given.bind = "127.0.0.1:9000";
  given.job = "other";
  given.slots = 1;
  apply_kubernetes_defaults(given, pod);
  CHECK(*given.name == "mine");
  CHECK(*given.bind == "127.0.0.1:9000");
  CHECK(*given.job == "other");
  CHECK(*given.slots == 1);
  CHECK(*given.cluster == "llama");
  // Outside a pod nothing changes.
  AgentFlags outside;
  pod.under_kubernetes = false;
  apply_kubernetes_defaults(outside, pod);
  CHECK_FALSE(outside.name);
  CHECK_FALSE(outside.bind);
}
