"""The pre-flight check in the netns lab: a keyed cluster of 4, `shoal check --json` once as it is, then with
one host's link capped both ways (tc tbf on its eth0 and on its veth peer at the switch) to a tenth of the
bandwidth the first check measured. The capped host must be flagged for its network, every link it took part
in must be slow, and nothing else may be: no other host flagged for the network, no other link slow. Each
check must take less than 10 s.

Registered in lab_scenarios.SCENARIOS. Run alone:
  lab_scenarios.py SHOAL_BINARY check_slow_link
"""

import time

from lab_shared_checks import check, progress

SLOW = 3  # the index of the capped host


def run_check(lab, r, key):
    start = time.monotonic()
    doc = lab.agent("h0").cli("check")
    took = time.monotonic() - start
    r[f"{key}_s"] = round(took, 2)
    r[f"{key}_median_gbps"] = doc["median_gbps"]
    r[f"{key}_links"] = [(link["a"], link["b"], link["round"], link["gbps"], link["rtt_us"], link["slow"])
                         for link in doc["links"]]
    check(took < 10, f"shoal check took {took:.1f} s (bound: 10 s)")
    check(len(doc["hosts"]) == len(lab.members()), f"the check covers {len(doc['hosts'])} hosts")
    return doc


def check_slow_link(lab, r):
    before = run_check(lab, r, "uncapped")
    check(before["median_gbps"], "the uncapped check measured no link")
    check(not before["slow_links"], f"slow links before any cap: {before['slow_links']}")
    # A tenth of the median, as tbf's rate in kbit/s; the bucket holds 10 ms of it (at least 32 KiB).
    rate_kbit = max(1000, int(before["median_gbps"] * 1e6 / 10))
    burst = max(32 * 1024, rate_kbit * 1000 // 8 // 100)
    r["cap_kbit"] = rate_kbit
    slow = lab.members()[SLOW].name
    lab.net.cap_bandwidth(SLOW, rate=f"{rate_kbit}kbit", burst=str(burst), latency="100ms")
    lab.net.cap_ingress(SLOW, rate=f"{rate_kbit}kbit", burst=str(burst), latency="100ms")
    try:
        progress(f"check_slow_link: {slow} capped to {rate_kbit} kbit/s both ways")
        doc = run_check(lab, r, "capped")
    finally:
        lab.net.uncap_bandwidth(SLOW)
        lab.net.uncap_ingress(SLOW)
    hosts = {h["name"]: h for h in doc["hosts"]}
    r["flagged"] = {h["name"]: h["reasons"] for h in doc["hosts"] if h["flagged"]}
    check(hosts[slow]["flagged"] and "network" in hosts[slow]["reasons"],
          f"{slow} (capped) is not flagged for its network: {hosts[slow]}")
    for name, h in hosts.items():
        if name != slow:
            check("network" not in h["reasons"], f"{name} is flagged for its network too: {h}")
    for link in doc["links"]:
        touches = slow in (link["a"], link["b"])
        check(link["slow"] == touches,
              f"link {link['a']}-{link['b']} (round {link['round']}, {link['gbps']} Gb/s) slow={link['slow']}")
    check(any(slow in (link["a"], link["b"]) and link["round"] == 2 for link in doc["links"]),
          f"{slow} took no part in round 2")


CHECK_SCENARIOS = {
    "check_slow_link": (check_slow_link, {"k": 4, "key": True}),
}
