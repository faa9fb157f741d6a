// shoal.SettleRule, SettleFacts, SettleDecision: the one rule that settles the state of an elastic loop
// after a view change (shoal/settle_rule.hpp), for shoal.torch.Elastic and for tests that check it with the
// same table as C++'s; and shoal.DrainRule, DrainDecision: whether a host drains at this step boundary
// (shoal/drain_rule.hpp).
#include <pybind11/stl.h>

#include <vector>

#include "bindings.hpp"
#include "shoal/drain_rule.hpp"
#include "shoal/settle_rule.hpp"

namespace shoal::python {

void bind_settle(py::module_& m) {
  py::class_<SettleFacts>(m, "SettleFacts", "What one rank contributes to SettleRule (shoal/settle_rule.hpp).")
      .def(py::init([](bool holds_state, bool kept_peers, uint64_t next_step, uint64_t digest, bool can_restore,
                       bool restore_after_loss) {
             SettleFacts f;
             f.holds_state = holds_state;
             f.kept_peers = kept_peers;
             f.next_step = next_step;
             f.digest = digest;
             f.can_restore = can_restore;
             f.restore_after_loss = restore_after_loss;
             return f;
           }),
           py::kw_only(), py::arg("holds_state") = false, py::arg("kept_peers") = true, py::arg("next_step") = 0,
           py::arg("digest") = 0, py::arg("can_restore") = false, py::arg("restore_after_loss") = false)
      .def_readwrite("holds_state", &SettleFacts::holds_state)
      .def_readwrite("kept_peers", &SettleFacts::kept_peers)
      .def_readwrite("next_step", &SettleFacts::next_step)
      .def_readwrite("digest", &SettleFacts::digest)
      .def_readwrite("can_restore", &SettleFacts::can_restore)
      .def_readwrite("restore_after_loss", &SettleFacts::restore_after_loss);

  py::class_<SettleDecision>(m, "SettleDecision", "What every rank does after SettleRule (the same everywhere).")
      .def_readonly("restore", &SettleDecision::restore)
      .def_readonly("anyone_holds_state", &SettleDecision::anyone_holds_state)
      .def_readonly("lost_peers", &SettleDecision::lost_peers)
      .def_readonly("next_step", &SettleDecision::next_step)
      .def_readonly("source_rank", &SettleDecision::source_rank)
      .def_readonly("hand_out", &SettleDecision::hand_out)
      .def("__eq__", [](const SettleDecision& a, const SettleDecision& b) { return a == b; })
      .def("__repr__", [](const SettleDecision& d) {
        return "SettleDecision(restore=" + std::string(d.restore ? "True" : "False") +
               ", anyone_holds_state=" + (d.anyone_holds_state ? "True" : "False") +
               ", lost_peers=" + (d.lost_peers ? "True" : "False") + ", next_step=" + std::to_string(d.next_step) +
               ", source_rank=" + std::to_string(d.source_rank) + ", hand_out=" + (d.hand_out ? "True" : "False") +
               ")";
      });

  py::class_<SettleRule>(m, "SettleRule",
                         "Which state every rank takes after a view change: the rule shoal::ElasticLoop and "
                         "shoal.torch.Elastic share (shoal/settle_rule.hpp).")
      .def_static(
          "decide", [](const std::vector<SettleFacts>& ranks) { return SettleRule::decide(ranks); }, py::arg("ranks"),
          "The decision from every rank's facts (ranks[r] is rank r's); pure.")
      .def_static(
          "agree",
          [](Communicator& comm, const SettleFacts& mine) {
            py::gil_scoped_release release;
            return SettleRule::agree(comm, mine);
          },
          py::arg("comm"), py::arg("mine"),
          "Collective: every rank passes its own facts and gets the same decision (one all-reduce).");

  py::class_<DrainDecision>(m, "DrainDecision", "Whether a drain is under way (DrainRule; the same on every rank).")
      .def_readonly("draining_ranks", &DrainDecision::draining_ranks)
      .def_readonly("drain", &DrainDecision::drain)
      .def_readonly("everyone", &DrainDecision::everyone)
      .def("__eq__", [](const DrainDecision& a, const DrainDecision& b) { return a == b; })
      .def("__repr__", [](const DrainDecision& d) {
        return "DrainDecision(draining_ranks=" + std::to_string(d.draining_ranks) +
               ", drain=" + (d.drain ? "True" : "False") + ", everyone=" + (d.everyone ? "True" : "False") + ")";
      });

  py::class_<DrainRule>(m, "DrainRule",
                        "Whether a host drains, agreed between two steps: the rule shoal::ElasticLoop and "
                        "shoal.torch's elastic wrappers share (shoal/drain_rule.hpp).")
      .def_property_readonly_static(
          "wait", [](const py::object&) { return std::chrono::duration<double>(DrainRule::kWait).count(); },
          "Seconds a draining rank waits for a peer to hold its last version, and a survivor for the view.")
      .def_static(
          "decide", [](const std::vector<bool>& draining) { return DrainRule::decide(draining); },
          py::arg("draining"), "The decision from every rank's word (draining[r] is rank r's); pure.")
      .def_static(
          "agree",
          [](Communicator& comm, bool mine) {
            py::gil_scoped_release release;
            return DrainRule::agree(comm, mine);
          },
          py::arg("comm"), py::arg("mine"),
          "Collective: every rank says whether its host drains and gets the same decision (one all-reduce).");
}

}  // namespace shoal::python
