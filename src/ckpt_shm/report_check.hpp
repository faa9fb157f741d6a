// What a restore may believe of the holder reports it reads from the epoch's rendezvous store. Any holder
// of the cluster key can write any key there, another rank's report included, so a report counts only
// for the member the view gives its rank, at that member's address; and a fetched version may be only as
// large as the reports promised. Pure functions of the reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ckpt_shm/restore_choice.hpp"

namespace shoal::ckpt {

// Who must have written report r: the member the committed view gives rank r, and its agent's address.
struct ExpectedHolder {
  std::string holder;
  std::string address;
};

// Empties every report that names another holder or address than `expected` gives its rank (a key holder
// that wrote another rank's report, its `local` flags and address, to steer restores to a server of its
// own), and every report beyond `expected`: such a report then vouches for no step and names no address
// to fetch from. Returns the ranks of the reports emptied.
std::vector<uint32_t> drop_foreign_reports(std::vector<HolderReport>& reports,
                                           std::span<const ExpectedHolder> expected);

// The most bytes saved rank `rank`'s version of `step` may have when fetched from `reports[holder]`: what
// a report holding it as its own (the rank's own host: local) says, else what the holder's report says.
// 0 when neither holds it, and so nothing of it is accepted.
// What `report` says saved rank `rank`'s version of `step` holds, 0 when it holds none.
uint64_t held_bytes(const HolderReport& report, uint32_t rank, uint64_t step);

uint64_t promised_bytes(std::span<const HolderReport> reports, uint32_t rank, uint64_t step, size_t holder);

}  // namespace shoal::ckpt
