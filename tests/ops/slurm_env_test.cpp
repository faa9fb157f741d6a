// Slurm's environment as agent defaults: host list expansion, the fallbacks between variables, errors
// that name the bad variable, and the seeds of one node.
#include "ops/slurm_env.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <set>

using shoal::net::HostPort;
using shoal::ops::Environment;
using shoal::ops::expand_hostlist;
using shoal::ops::slurm_defaults;
using shoal::ops::slurm_seeds;
using shoal::ops::SlurmDefaults;
using Names = std::vector<std::string>;

namespace {

// The names of a list that must expand.
Names expanded(std::string_view list) {
  auto names = expand_hostlist(list);
  REQUIRE_MESSAGE(names, names.error().message);
  return *names;
}

// The error of a list that must be refused.
std::string refusal(std::string_view list) {
  auto names = expand_hostlist(list);
  REQUIRE_MESSAGE(!names, "expected an error for '", list, "'");
  return names.error().message;
}

bool contains(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

// A realistic environment of the second node of a three-node step with eight GPUs each.
Environment full_env() {
  return {{"SLURM_JOB_ID", "4242"},
          {"SLURM_STEP_NODELIST", "gpu[01-03]"},
          {"SLURM_JOB_NODELIST", "gpu[01-04]"},
          {"SLURMD_NODENAME", "gpu02"},
          {"SLURM_GPUS_ON_NODE", "8"},
          {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_JOB_NUM_NODES", "4"},
          {"SLURM_NNODES", "4"},
          {"CUDA_VISIBLE_DEVICES", "0,1"}};
}

std::string defaults_error(const Environment& env) {
  auto d = slurm_defaults(env);
  REQUIRE_MESSAGE(!d, "expected an error");
  return d.error().message;
}

}  // namespace

TEST_CASE("plain names and comma-separated entries expand to themselves") {
  CHECK(expanded("node1") == Names{"node1"});
  CHECK(expanded("a,b,c") == Names{"a", "b", "c"});
  CHECK(expanded("gpu-01.cluster") == Names{"gpu-01.cluster"});
}

TEST_CASE("a bracket lists ranges and single numbers, and commas inside it belong to it") {
  CHECK(expanded("node[1-3]") == Names{"node1", "node2", "node3"});
  CHECK(expanded("node[01-04,07],gpu5") == Names{"node01", "node02", "node03", "node04", "node07", "gpu5"});
  CHECK(expanded("n[3,1,2]") == Names{"n3", "n1", "n2"});
  CHECK(expanded("n[5-5]") == Names{"n5"});
  CHECK(expanded("[1-2]") == Names{"1", "2"});
}

TEST_CASE("zero padding follows the width of the range's first number") {
  const Names ten = expanded("node[01-10]");
  REQUIRE(ten.size() == 10);
  CHECK(ten.front() == "node01");
  CHECK(ten[8] == "node09");
  CHECK(ten.back() == "node10");
  CHECK(expanded("n[8-11]") == Names{"n8", "n9", "n10", "n11"});
  CHECK(expanded("n[008-011]") == Names{"n008", "n009", "n010", "n011"});
  CHECK(expanded("n[098-101]") == Names{"n098", "n099", "n100", "n101"});
  CHECK(expanded("n[007,8]") == Names{"n007", "n8"});
}

TEST_CASE("text after a bracket follows every number") {
  CHECK(expanded("rack[1-2]-gpu") == Names{"rack1-gpu", "rack2-gpu"});
}

TEST_CASE("several brackets in one name give the cartesian product in order") {
  CHECK(expanded("r[1-2]n[1-2]") == Names{"r1n1", "r1n2", "r2n1", "r2n2"});
  CHECK(expanded("r[1-2]-n[1,3]-g") == Names{"r1-n1-g", "r1-n3-g", "r2-n1-g", "r2-n3-g"});
}

TEST_CASE("mixed entries keep their order and duplicates keep their first place") {
  CHECK(expanded("a,b[1-2],c") == Names{"a", "b1", "b2", "c"});
  CHECK(expanded("b2,a,b[1-3],a") == Names{"b2", "a", "b1", "b3"});
  CHECK(expanded("n[1-3,2-4]") == Names{"n1", "n2", "n3", "n4"});
}

TEST_CASE("empty lists and empty entries are refused") {
  CHECK(contains(refusal(""), "empty"));
  CHECK(contains(refusal("a,,b"), "'a,,b' has an empty entry"));
  CHECK(contains(refusal("a,"), "empty entry"));
  CHECK(contains(refusal(",a"), "empty entry"));
}

TEST_CASE("whitespace is refused") {
  CHECK(contains(refusal("a, b"), "whitespace"));
  CHECK(contains(refusal(" a"), "whitespace"));
  CHECK(contains(refusal("n[1- 2]"), "whitespace"));
}

TEST_CASE("unbalanced and nested brackets are refused") {
  CHECK(contains(refusal("node[1-3"), "'node[1-3' has a '[' without a matching ']'"));
  CHECK(contains(refusal("a,node[1-3,b"), "without a matching ']'"));
  CHECK(contains(refusal("node1-3]"), "'node1-3]' has a ']' without a '['"));
  CHECK(contains(refusal("a[1]]"), "without a '['"));
  CHECK(contains(refusal("a[1[2]]"), "brackets do not nest"));
}

TEST_CASE("empty brackets and empty items in brackets are refused") {
  CHECK(contains(refusal("node[]"), "'node[]' has empty brackets"));
  CHECK(contains(refusal("n[1,,2]"), "empty item in '[1,,2]'"));
  CHECK(contains(refusal("n[1,]"), "empty item"));
}

TEST_CASE("reversed ranges and non-digits in ranges are refused") {
  CHECK(contains(refusal("n[5-3]"), "the range '5-3' in the host list entry 'n[5-3]' ends below its start"));
  CHECK(contains(refusal("n[a-3]"), "'a-3' in the host list entry 'n[a-3]' is not a number"));
  CHECK(contains(refusal("n[1-b]"), "'1-b'"));
  CHECK(contains(refusal("n[1-2-3]"), "'1-2-3'"));
  CHECK(contains(refusal("n[-3]"), "'-3'"));
  CHECK(contains(refusal("n[3-]"), "'3-'"));
  CHECK(contains(refusal("n[+3]"), "'+3'"));
  CHECK(contains(refusal("n[1234567890123456789012]"), "too large"));
}

TEST_CASE("lists of more than 65536 names are refused before expanding") {
  CHECK(contains(refusal("n[0-99999]"), "more than 65536 names"));
  CHECK(contains(refusal("n[0-99999]"), "'n[0-99999]'"));
  CHECK(contains(refusal("n[0-999999999999999999]"), "more than 65536"));
  CHECK(contains(refusal("r[1-300]n[1-300]"), "more than 65536"));
  CHECK(contains(refusal("a[1-40000],b[1-40000]"), "'b[1-40000]'"));
  CHECK(expanded("n[1-65536]").size() == 65536);
  CHECK(contains(refusal("n[1-65536],x"), "'x'"));
}

TEST_CASE("without SLURM_JOB_ID nothing is taken from the environment") {
  auto d = slurm_defaults(Environment{{"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_NNODES", "x"}});
  REQUIRE(d);
  CHECK_FALSE(d->under_slurm);
  CHECK(d->job_id.empty());
  CHECK(d->cluster.empty());
  CHECK(d->name.empty());
  CHECK(d->nodes.empty());
  CHECK_FALSE(d->slots);
  CHECK_FALSE(d->min_hosts);
  CHECK(d->notes.empty());

  auto empty_id = slurm_defaults(Environment{{"SLURM_JOB_ID", ""}, {"SLURM_JOB_NODELIST", "a"}});
  REQUIRE(empty_id);
  CHECK_FALSE(empty_id->under_slurm);

  auto no_list = slurm_defaults(Environment{{"SLURM_JOB_ID", "7"}});
  REQUIRE(no_list);
  CHECK_FALSE(no_list->under_slurm);
  CHECK(no_list->cluster.empty());
}

TEST_CASE("a realistic step environment gives every default") {
  auto d = slurm_defaults(full_env());
  REQUIRE_MESSAGE(d, d.error().message);
  CHECK(d->under_slurm);
  CHECK(d->job_id == "4242");
  CHECK(d->cluster == "slurm-4242");
  CHECK(d->job == "slurm-4242");
  CHECK(d->name == "gpu02");
  CHECK(d->nodes == Names{"gpu01", "gpu02", "gpu03"});
  CHECK(d->slots == 8u);
  CHECK(d->min_hosts == 3u);
  CHECK(d->notes == Names{"cluster id and checkpoint job slurm-4242 from SLURM_JOB_ID",
                          "3 nodes gpu[01-03] from SLURM_STEP_NODELIST", "name gpu02 from SLURMD_NODENAME",
                          "slots 8 from SLURM_GPUS_ON_NODE", "min hosts 3 from SLURM_STEP_NUM_NODES"});
}

TEST_CASE("outside a step the job's variables are used") {
  Environment env{{"SLURM_JOB_ID", "99"},
                  {"SLURM_JOB_NODELIST", "n[1-4]"},
                  {"SLURM_JOB_NUM_NODES", "4"},
                  {"SLURM_NNODES", "2"},
                  {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}};
  auto d = slurm_defaults(env);
  REQUIRE_MESSAGE(d, d.error().message);
  CHECK(d->nodes == Names{"n1", "n2", "n3", "n4"});
  CHECK(d->name.empty());
  CHECK(d->slots == 4u);
  CHECK(d->min_hosts == 4u);
  CHECK(contains(d->notes.at(1), "from SLURM_JOB_NODELIST"));
  CHECK(d->notes.at(2) == "slots 4 from CUDA_VISIBLE_DEVICES 0,1,2,3");
  CHECK(d->notes.at(3) == "min hosts 4 from SLURM_JOB_NUM_NODES");

  env.erase("SLURM_JOB_NUM_NODES");
  auto nnodes = slurm_defaults(env);
  REQUIRE(nnodes);
  CHECK(nnodes->min_hosts == 2u);

  env.erase("SLURM_NNODES");
  auto counted = slurm_defaults(env);
  REQUIRE(counted);
  CHECK(counted->min_hosts == 4u);
  CHECK(counted->notes.back() == "min hosts 4 from the length of SLURM_JOB_NODELIST");
}

TEST_CASE("CUDA_VISIBLE_DEVICES gives no slot count when Slurm hid every GPU") {
  Environment env{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "a"}, {"CUDA_VISIBLE_DEVICES", "NoDevFiles"}};
  auto hidden = slurm_defaults(env);
  REQUIRE(hidden);
  CHECK_FALSE(hidden->slots);
  env["CUDA_VISIBLE_DEVICES"] = "";
  auto empty = slurm_defaults(env);
  REQUIRE(empty);
  CHECK_FALSE(empty->slots);
  env["CUDA_VISIBLE_DEVICES"] = "GPU-8a1b,GPU-77c2";
  auto uuids = slurm_defaults(env);
  REQUIRE(uuids);
  CHECK(uuids->slots == 2u);
  CHECK(uuids->min_hosts == 1u);
}

TEST_CASE("malformed values are errors that name the variable and its value") {
  auto with = [](const std::string& key, const std::string& value) {
    Environment env = full_env();
    env[key] = value;
    return defaults_error(env);
  };
  CHECK(contains(with("SLURM_STEP_NODELIST", "gpu[03-01]"), "SLURM_STEP_NODELIST='gpu[03-01]'"));
  CHECK(contains(with("SLURM_STEP_NODELIST", "gpu[03-01]"), "ends below its start"));
  CHECK(contains(with("SLURM_GPUS_ON_NODE", "eight"), "SLURM_GPUS_ON_NODE='eight'"));
  CHECK(contains(with("SLURM_GPUS_ON_NODE", "0"), "SLURM_GPUS_ON_NODE='0'"));
  CHECK(contains(with("SLURM_GPUS_ON_NODE", "-1"), "positive whole number"));
  CHECK(contains(with("SLURM_GPUS_ON_NODE", "4294967296"), "SLURM_GPUS_ON_NODE='4294967296'"));
  CHECK(contains(with("SLURM_STEP_NUM_NODES", "3x"), "SLURM_STEP_NUM_NODES='3x'"));
  CHECK(contains(with("SLURMD_NODENAME", "gpu04"),
                 "SLURMD_NODENAME='gpu04' is not in the node list "
                 "SLURM_STEP_NODELIST='gpu[01-03]'"));
  CHECK(contains(with("SLURM_JOB_ID", "42/1"), "SLURM_JOB_ID='42/1'"));

  Environment job_only{{"SLURM_JOB_ID", "5"}, {"SLURM_JOB_NODELIST", "a,b"}, {"SLURM_NNODES", "two"}};
  CHECK(contains(defaults_error(job_only), "SLURM_NNODES='two'"));
  job_only.erase("SLURM_NNODES");
  job_only["SLURM_JOB_NUM_NODES"] = " 2";
  CHECK(contains(defaults_error(job_only), "SLURM_JOB_NUM_NODES=' 2'"));
  job_only.erase("SLURM_JOB_NUM_NODES");
  job_only["CUDA_VISIBLE_DEVICES"] = "0,,1";
  CHECK(contains(defaults_error(job_only), "CUDA_VISIBLE_DEVICES='0,,1' has an empty entry"));
  job_only["CUDA_VISIBLE_DEVICES"] = "0,";
  CHECK(contains(defaults_error(job_only), "CUDA_VISIBLE_DEVICES='0,'"));
  job_only.erase("CUDA_VISIBLE_DEVICES");
  job_only["SLURM_JOB_NODELIST"] = "a[1-2";
  CHECK(contains(defaults_error(job_only), "SLURM_JOB_NODELIST='a[1-2'"));
}

TEST_CASE("the seeds are every other node at the port, ring neighbours and the far side first") {
  SlurmDefaults d;
  d.nodes = {"gpu01", "gpu02", "gpu03", "gpu04"};
  CHECK(slurm_seeds(d, "gpu03", 7946) == std::vector<HostPort>{{"gpu02", 7946}, {"gpu04", 7946}, {"gpu01", 7946}});
  CHECK(slurm_seeds(d, "gpu01", 7946) == std::vector<HostPort>{{"gpu04", 7946}, {"gpu02", 7946}, {"gpu03", 7946}});
  CHECK(slurm_seeds(d, "elsewhere", 1).size() == 4);
  SlurmDefaults two;
  two.nodes = {"a", "b"};
  CHECK(slurm_seeds(two, "a", 1) == std::vector<HostPort>{{"b", 1}});

  // 100 nodes: each node is among the first three seeds of exactly three others (no node is everyone's),
  // and the rest follow, each other node once.
  SlurmDefaults big;
  for (int k = 0; k < 100; ++k) big.nodes.push_back("n" + std::to_string(k));
  std::map<std::string, int> first_three;
  for (const auto& self : big.nodes) {
    const auto seeds = slurm_seeds(big, self, 1);
    CHECK(seeds.size() == 99);
    std::set<std::string> distinct;
    for (const auto& s : seeds) distinct.insert(s.host);
    CHECK(distinct.size() == 99);
    CHECK_FALSE(distinct.count(self));
    for (size_t k = 0; k < 3; ++k) ++first_three[seeds[k].host];
  }
  for (const auto& [node, count] : first_three) CHECK(count == 3);

  SlurmDefaults one;
  one.nodes = {"solo"};
  CHECK(slurm_seeds(one, "solo", 7946).empty());
}

TEST_CASE("the process environment keeps only Slurm's variables and CUDA_VISIBLE_DEVICES") {
  ::setenv("SLURM_SHOAL_TEST_MARK", "x=1", 1);
  ::setenv("SHOAL_TEST_OTHER", "y", 1);
  const Environment env = shoal::ops::process_environment();
  ::unsetenv("SLURM_SHOAL_TEST_MARK");
  ::unsetenv("SHOAL_TEST_OTHER");
  CHECK(env.at("SLURM_SHOAL_TEST_MARK") == "x=1");
  CHECK(env.count("SHOAL_TEST_OTHER") == 0);
  for (const auto& [key, value] : env) {
    CHECK((key.rfind("SLURM", 0) == 0 || key == "CUDA_VISIBLE_DEVICES" || key == "SHOAL_KEY_FILE" ||
           key == "CREDENTIALS_DIRECTORY" || key == "HOME"));
  }
}
