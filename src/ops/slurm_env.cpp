// Slurm's environment as agent defaults: host list expansion, the fallbacks between Slurm's variables,
// and the seeds of one node.
#include "ops/slurm_env.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <limits>
#include <unordered_set>
#include <utility>

extern char** environ;  // NOLINT: POSIX; declared here in case <unistd.h> does not

namespace shoal::ops {
namespace {

// ---- Host lists ----------------------------------------------------------------------------------------

// One range inside brackets: "01-10" is {1, 10, 2}, "7" is {7, 7, 1}.
struct NumberRange {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 0;  // the first number's digits: shorter numbers are padded with zeros to it
};

// A piece of an entry: literal text, or (when `ranges` is not empty) a bracket expression.
struct Piece {
  std::string literal;
  std::vector<NumberRange> ranges;
};

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The entry that contains position `pos` of `list` (bounded by top-level commas, or the ends).
std::string_view entry_around(std::string_view list, size_t start, size_t pos) {
  const auto comma = list.find(',', pos);
  return list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
}

// Splits at top-level commas, checking whitespace, empty entries and bracket balance and nesting.
Result<std::vector<std::string_view>> split_entries(std::string_view list) {
  if (list.empty()) return fail("the host list is empty; expected names such as node[01-04],gpu5");
  std::vector<std::string_view> out;
  size_t start = 0;
  bool open = false;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (std::isspace(static_cast<unsigned char>(c))) {
      return fail("the host list " + quote(list) +
                  " contains whitespace; Slurm host lists have none, as in "
                  "node[01-04],gpu5");
    }
    if (c == '[') {
      if (open) {
        return fail("the host list entry " + quote(entry_around(list, start, i)) +
                    " has a '[' inside brackets; brackets do not nest");
      }
      open = true;
    } else if (c == ']') {
      if (!open) {
        return fail("the host list entry " + quote(entry_around(list, start, i)) +
                    " has a ']' without a '[' before it");
      }
      open = false;
    } else if (c == ',' && (!open || i == list.size())) {
      const std::string_view entry = list.substr(start, i - start);
      if (open) return fail("the host list entry " + quote(entry) + " has a '[' without a matching ']'");
      if (entry.empty()) {
        return fail("the host list " + quote(list) + " has an empty entry; expected names separated by single commas");
      }
      out.push_back(entry);
      start = i + 1;
    }
  }
  return out;
}

// One number of a range, with digits only.
Result<uint64_t> parse_number(std::string_view digits, std::string_view item, std::string_view entry) {
  if (!is_digits(digits)) {
    return fail(quote(item) + " in the host list entry " + quote(entry) +
                " is not a number or a range of numbers; expected digits, as in 7 or 01-16");
  }
  if (digits.size() > 18)
    return fail(quote(item) + " in the host list entry " + quote(entry) + " is too large a number");
  uint64_t n = 0;
  for (char c : digits) n = n * 10 + static_cast<uint64_t>(c - '0');
  return n;
}

// "01-10" or "7": one item of a bracket expression.
Result<NumberRange> parse_range(std::string_view item, std::string_view entry) {
  const auto dash = item.find('-');
  const std::string_view first = item.substr(0, dash);
  auto lo = parse_number(first, item, entry);
  if (!lo) return fail(lo.error().message);
  if (dash == std::string_view::npos) return NumberRange{*lo, *lo, first.size()};
  auto hi = parse_number(item.substr(dash + 1), item, entry);
  if (!hi) return fail(hi.error().message);
  if (*hi < *lo) {
    return fail("the range " + quote(item) + " in the host list entry " + quote(entry) + " ends below its start");
  }
  return NumberRange{*lo, *hi, first.size()};
}

// The inside of one bracket expression: "01-04,07".
Result<std::vector<NumberRange>> parse_bracket(std::string_view inside, std::string_view entry) {
  if (inside.empty()) {
    return fail("the host list entry " + quote(entry) +
                " has empty brackets; expected numbers or ranges inside, "
                "as in [1-4,7]");
  }
  std::vector<NumberRange> out;
  size_t start = 0;
  while (true) {
    const auto comma = inside.find(',', start);
    const std::string_view item = inside.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (item.empty()) {
      return fail("the host list entry " + quote(entry) + " has an empty item in " +
                  quote("[" + std::string(inside) + "]") + "; expected numbers or ranges separated by single commas");
    }
    auto range = parse_range(item, entry);
    if (!range) return fail(range.error().message);
    out.push_back(*range);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

// An entry ("rack[1-2]-gpu[1-4]") as pieces; brackets are known to be balanced and flat.
Result<std::vector<Piece>> parse_entry(std::string_view entry) {
  std::vector<Piece> out;
  size_t pos = 0;
  while (pos < entry.size()) {
    const auto open = entry.find('[', pos);
    if (open != pos) {
      out.push_back(Piece{std::string(entry.substr(pos, open - pos)), {}});
      if (open == std::string_view::npos) break;
    }
    const auto close = entry.find(']', open);
    auto ranges = parse_bracket(entry.substr(open + 1, close - open - 1), entry);
    if (!ranges) return fail(ranges.error().message);
    out.push_back(Piece{"", std::move(*ranges)});
    pos = close + 1;
  }
  return out;
}

// How many names `pieces` stands for, or kMaxHostlistNames + 1 when that is more than the limit.
uint64_t count_names(const std::vector<Piece>& pieces) {
  constexpr uint64_t over = kMaxHostlistNames + 1;
  uint64_t product = 1;
  for (const auto& piece : pieces) {
    if (piece.ranges.empty()) continue;
    uint64_t sum = 0;
    for (const auto& r : piece.ranges) {
      sum += r.hi - r.lo >= over ? over : r.hi - r.lo + 1;
      if (sum > kMaxHostlistNames) return over;
    }
    product *= sum;  // both are at most kMaxHostlistNames: no overflow
    if (product > kMaxHostlistNames) return over;
  }
  return product;
}

std::string padded(uint64_t n, size_t width) {
  std::string s = std::to_string(n);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// Appends every name of pieces[i..] after `prefix`, in order, skipping names already seen.
void expand_pieces(const std::vector<Piece>& pieces, size_t i, const std::string& prefix,
                   std::unordered_set<std::string>& seen, std::vector<std::string>& out) {
  if (i == pieces.size()) {
    if (seen.insert(prefix).second) out.push_back(prefix);
    return;
  }
  const Piece& piece = pieces[i];
  if (piece.ranges.empty()) return expand_pieces(pieces, i + 1, prefix + piece.literal, seen, out);
  for (const auto& r : piece.ranges) {
    for (uint64_t n = r.lo;; ++n) {
      expand_pieces(pieces, i + 1, prefix + padded(n, r.width), seen, out);
      if (n == r.hi) break;
    }
  }
}

// ---- Environment ---------------------------------------------------------------------------------------

// A variable's value; empty values count as unset.
std::optional<std::string> lookup(const Environment& env, const std::string& key) {
  const auto it = env.find(key);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// The first of `keys` that is set, with its value.
std::optional<std::pair<std::string, std::string>> first_set(const Environment& env,
                                                             std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (auto value = lookup(env, key)) return std::make_pair(std::string(key), std::move(*value));
  }
  return std::nullopt;
}

std::string shown(const std::string& key, const std::string& value) { return key + "=" + quote(value); }

Result<uint32_t> parse_count(const std::string& key, const std::string& value) {
  uint64_t n = 0;
  bool ok = is_digits(value) && value.size() <= 10;
  if (ok) {
    for (char c : value) n = n * 10 + static_cast<uint64_t>(c - '0');
    ok = n > 0 && n <= std::numeric_limits<uint32_t>::max();
  }
  if (!ok) return fail(shown(key, value) + " is not a count; expected a positive whole number such as 8");
  return static_cast<uint32_t>(n);
}

bool valid_job_id(const std::string& id) {
  for (char c : id) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

// The number of devices CUDA_VISIBLE_DEVICES lists; nullopt for "NoDevFiles" (Slurm's "no GPU here").
Result<std::optional<uint32_t>> count_visible_devices(const std::string& value) {
  if (value == "NoDevFiles") return std::optional<uint32_t>{};
  uint32_t n = 0;
  size_t start = 0;
  while (true) {
    const auto comma = value.find(',', start);
    if (comma == start || start == value.size()) {
      return fail(shown("CUDA_VISIBLE_DEVICES", value) +
                  " has an empty entry; expected device indexes or UUIDs separated by single commas");
    }
    ++n;
    if (comma == std::string::npos) return std::optional<uint32_t>{n};
    start = comma + 1;
  }
}

Status read_nodes(const Environment& env, SlurmDefaults& d, std::string& nodes_key) {
  const auto list = first_set(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
  auto nodes = expand_hostlist(list->second);
  if (!nodes)
    return fail(shown(list->first, list->second) + " is not a valid Slurm host list: " + nodes.error().message);
  d.nodes = std::move(*nodes);
  nodes_key = list->first;
  d.notes.push_back(std::to_string(d.nodes.size()) + " nodes " + list->second + " from " + list->first);
  return Ok{};
}

Status read_name(const Environment& env, SlurmDefaults& d, const std::string& nodes_key) {
  const auto name = lookup(env, "SLURMD_NODENAME");
  if (!name) return Ok{};
  bool listed = false;
  for (const auto& n : d.nodes) listed = listed || n == *name;
  if (!listed) {
    return fail(shown("SLURMD_NODENAME", *name) + " is not in the node list " + shown(nodes_key, env.at(nodes_key)));
  }
  d.name = *name;
  d.notes.push_back("name " + d.name + " from SLURMD_NODENAME");
  return Ok{};
}

Status read_slots(const Environment& env, SlurmDefaults& d) {
  if (const auto gpus = lookup(env, "SLURM_GPUS_ON_NODE")) {
    auto n = parse_count("SLURM_GPUS_ON_NODE", *gpus);
    if (!n) return fail(n.error().message);
    d.slots = *n;
    d.notes.push_back("slots " + std::to_string(*n) + " from SLURM_GPUS_ON_NODE");
  } else if (const auto visible = lookup(env, "CUDA_VISIBLE_DEVICES")) {
    auto n = count_visible_devices(*visible);
    if (!n) return fail(n.error().message);
    if (!*n) return Ok{};
    d.slots = **n;
    d.notes.push_back("slots " + std::to_string(**n) + " from CUDA_VISIBLE_DEVICES " + *visible);
  }
  return Ok{};
}

Status read_min_hosts(const Environment& env, SlurmDefaults& d, const std::string& nodes_key) {
  if (const auto count = first_set(env, {"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"})) {
    auto n = parse_count(count->first, count->second);
    if (!n) return fail(n.error().message);
    d.min_hosts = *n;
    d.notes.push_back("min hosts " + std::to_string(*n) + " from " + count->first);
  } else {
    d.min_hosts = static_cast<uint32_t>(d.nodes.size());
    d.notes.push_back("min hosts " + std::to_string(d.nodes.size()) + " from the length of " + nodes_key);
  }
  return Ok{};
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view list) {
  auto entries = split_entries(list);
  if (!entries) return fail(entries.error().message);
  std::vector<std::vector<Piece>> parsed;
  uint64_t total = 0;
  for (const auto entry : *entries) {
    auto pieces = parse_entry(entry);
    if (!pieces) return fail(pieces.error().message);
    total += count_names(*pieces);
    if (total > kMaxHostlistNames) {
      return fail("the host list expands to more than " + std::to_string(kMaxHostlistNames) +
                  " names (the limit is passed at the entry " + quote(entry) + "); refusing to expand it");
    }
    parsed.push_back(std::move(*pieces));
  }
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const auto& pieces : parsed) expand_pieces(pieces, 0, "", seen, out);
  return out;
}

Result<SlurmDefaults> slurm_defaults(const Environment& env) {
  SlurmDefaults d;
  const auto job_id = lookup(env, "SLURM_JOB_ID");
  if (!job_id || !first_set(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"})) return d;
  if (!valid_job_id(*job_id)) {
    return fail(shown("SLURM_JOB_ID", *job_id) + " is not a job id; expected letters, digits, '-' and '_' only");
  }
  d.under_slurm = true;
  d.job_id = *job_id;
  d.cluster = "slurm-" + d.job_id;
  d.job = d.cluster;
  d.notes.push_back("cluster id and checkpoint job " + d.cluster + " from SLURM_JOB_ID");
  std::string nodes_key;
  if (auto s = read_nodes(env, d, nodes_key); !s) return fail(s.error().message);
  if (auto s = read_name(env, d, nodes_key); !s) return fail(s.error().message);
  if (auto s = read_slots(env, d); !s) return fail(s.error().message);
  if (auto s = read_min_hosts(env, d, nodes_key); !s) return fail(s.error().message);
  return d;
}

std::vector<net::HostPort> slurm_seeds(const SlurmDefaults& d, const std::string& self, uint16_t port) {
  std::vector<net::HostPort> out;
  const auto me = std::find(d.nodes.begin(), d.nodes.end(), self);
  if (me == d.nodes.end()) {  // not in the list: every node, in list order
    for (const auto& node : d.nodes) out.push_back(net::HostPort{node, port});
    return out;
  }
  const size_t n = d.nodes.size(), i = static_cast<size_t>(me - d.nodes.begin());
  if (n < 2) return out;
  // Gossip asks the first few seeds first (gossip::Config::join_fanout): the ring neighbours and the node
  // half way round, so every node is asked by about three others (a ring is connected, the chord keeps
  // paths short), then the rest in ring order after this node, so later attempts spread too.
  std::vector<size_t> order = {(i + n - 1) % n, (i + 1) % n, (i + n / 2) % n};
  for (size_t k = 2; k < n; ++k) order.push_back((i + k) % n);
  std::vector<bool> taken(n, false);
  taken[i] = true;
  for (const size_t j : order) {
    if (taken[j]) continue;
    taken[j] = true;
    out.push_back(net::HostPort{d.nodes[j], port});
  }
  return out;
}

Environment process_environment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = entry.substr(0, eq);
    if (key.rfind("SLURM", 0) == 0 || key == "CUDA_VISIBLE_DEVICES" || key == "SHOAL_KEY_FILE" ||
        key == "CREDENTIALS_DIRECTORY" || key == "HOME" || key == "KUBERNETES_SERVICE_HOST" ||
        key == "SHOAL_POD_NAME" || key == "SHOAL_NODE_NAME" || key == "SHOAL_JOB" || key == "SHOAL_POD_IP" ||
        key == "NVIDIA_VISIBLE_DEVICES") {
      env.emplace(std::string(key), std::string(entry.substr(eq + 1)));
    }
  }
  return env;
}

}  // namespace shoal::ops
